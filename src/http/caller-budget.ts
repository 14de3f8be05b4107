import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Caller } from '../domain/access/authorizer.js';
import { HttpError } from '../errors.js';
import type { JsonLdReader } from '../rdf/parse.js';

export interface CallerBudgetOptions {
  /** Requests of one caller worked on at once. */
  requestsInFlight: number;
  /** Body bytes of one caller held at once (received, or announced by Content-Length), until the answers. */
  bodyBytesInFlight: number;
  /** JSON-LD bodies of one caller at the jsonld.js worker at once. */
  jsonLdDocuments: number;
}

/** What one caller has in flight; kept while it has anything in flight. */
interface Usage {
  readonly agent: string;
  readonly budget: CallerBudget;
  requests: number;
  bodyBytes: number;
  /** Its bodies at the jsonld.js worker (waiting or read there). */
  jsonLdDocuments: number;
}

const USAGE = Symbol('usage');
const BODY_BYTES = Symbol('bodyBytes');
/** On a request whose body is counted as it arrives: its response, which carries the counts. */
const RESPONSE = Symbol('response');
type Counted = ServerResponse & { [USAGE]?: Usage; [BODY_BYTES]?: number };
type CountedRequest = IncomingMessage & { [RESPONSE]: Counted };

const callerBusy = (message: string) => new HttpError(429, 'caller_busy', { message });
const jsonLdBusy = (limit: number) =>
  callerBusy(
    `${limit} of your JSON-LD bodies are being read by jsonld.js, the most it takes at once for one caller ` +
      '(limits.perCaller.jsonLdDocuments); retry once they are answered',
  );

/** The response is done (answered or cut off): what its request held is released. */
function release(this: Counted): void {
  const usage = this[USAGE]!;
  usage.requests--;
  usage.bodyBytes -= this[BODY_BYTES] ?? 0;
  usage.budget.forgetIfIdle(usage);
}

/** A chunk of a body without Content-Length, counted as it arrives. */
function countChunk(this: CountedRequest, chunk: Buffer): void {
  const res = this[RESPONSE];
  res[BODY_BYTES]! += chunk.length;
  res[USAGE]!.bodyBytes += chunk.length;
}

/**
 * Each caller's (agent's) share of the server: its requests and body bytes in flight, each within a
 * budget, so that one partner's flood leaves room for everyone else; past it, 429 with Retry-After
 * (RFC 6585, section 4). Internal actors (`internalAgents`, the operator's own systems) are not counted.
 */
export class CallerBudget {
  private readonly usages = new Map<string, Usage>();

  constructor(private readonly options: CallerBudgetOptions) {}

  /**
   * Counts a request of `caller` from now until its response closes; false when the caller has no room for it (nothing
   * counted).
   */
  enter(res: ServerResponse, caller: Caller): boolean {
    if (caller.internal) return true;
    let usage = this.usages.get(caller.agent);
    if (!usage) {
      usage = { agent: caller.agent, budget: this, requests: 0, bodyBytes: 0, jsonLdDocuments: 0 };
      this.usages.set(caller.agent, usage);
    } else if (usage.requests >= this.options.requestsInFlight) return false;
    usage.requests++;
    (res as Counted)[USAGE] = usage;
    res.on('close', release);
    return true;
  }

  /** The answer to a request `enter` refused. */
  refusal(): HttpError {
    return callerBusy(
      `you have ${this.options.requestsInFlight} requests in flight, the most this server works on at once ` +
        'for one caller (limits.perCaller.requestsInFlight); retry once some are answered',
    );
  }

  /**
   * The JSON-LD reader of the caller of `res`: `reader` itself for a caller not counted, else
   * `reader` counting its documents there, refusing one past `limits.perCaller.jsonLdDocuments`.
   */
  static jsonLdReader(res: ServerResponse, reader: JsonLdReader): JsonLdReader {
    const usage = (res as Counted)[USAGE];
    if (!usage) return reader;
    return {
      toQuads(text, options) {
        if (usage.jsonLdDocuments >= usage.budget.options.jsonLdDocuments)
          throw jsonLdBusy(usage.budget.options.jsonLdDocuments);
        usage.jsonLdDocuments++;
        return reader.toQuads(text, options).finally(() => {
          usage.jsonLdDocuments--;
          usage.budget.forgetIfIdle(usage);
        });
      },
    };
  }

  /** Forgets what a caller had once it has nothing in flight any more. */
  forgetIfIdle(usage: Usage): void {
    if (usage.requests === 0 && usage.jsonLdDocuments === 0 && this.usages.get(usage.agent) === usage)
      this.usages.delete(usage.agent);
  }

  /**
   * Counts the body `req` is about to be read with, until its response closes: its Content-Length at
   * once, else its bytes as they arrive (the listener goes on in the turn the reader starts, so both
   * see every chunk). A body that would take its caller past the budget is refused, unless the caller
   * has no other body in flight (a single body is bounded by `limits.bodyBytes`). Requests of
   * internal actors, and those read before authentication (the token endpoint), are not counted.
   */
  static countBody(req: IncomingMessage, res: ServerResponse): HttpError | undefined {
    const counted = res as Counted;
    const usage = counted[USAGE];
    // Not counted, or counted already (two readers tried in turn).
    if (!usage || counted[BODY_BYTES] !== undefined) return undefined;
    const length = req.headers['content-length'];
    const declared = length === undefined ? 0 : Number(length) || 0;
    const { bodyBytesInFlight, jsonLdDocuments } = usage.budget.options;
    // A caller whose bodies keep the one jsonld.js worker busy: its next is refused before it is read
    // and parsed, which costs the request thread more than anything else such a body does.
    if (usage.jsonLdDocuments >= jsonLdDocuments) return jsonLdBusy(jsonLdDocuments);
    if (usage.bodyBytes > 0 && usage.bodyBytes + declared > bodyBytesInFlight) {
      return callerBusy(
        `you have ${usage.bodyBytes} bytes of request bodies in flight; with this one's ${declared} that is ` +
          'more than this server holds at once for one caller ' +
          `(limits.perCaller.bodyBytesInFlight, ${bodyBytesInFlight}); retry once some are answered`,
      );
    }
    counted[BODY_BYTES] = declared;
    usage.bodyBytes += declared;
    if (length === undefined && req.headers['transfer-encoding'] !== undefined) {
      (req as CountedRequest)[RESPONSE] = counted;
      req.on('data', countChunk);
    }
    return undefined;
  }
}
