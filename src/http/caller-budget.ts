import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Caller } from '../domain/access/authorizer.js';
import { HttpError } from '../errors.js';

export interface CallerBudgetOptions {
  /** Requests of one caller worked on at once. */
  requestsInFlight: number;
  /** Body bytes of one caller held at once (received, or announced by Content-Length), until the answers. */
  bodyBytesInFlight: number;
}

/** What one caller has in flight; kept while it has anything in flight. */
interface Usage {
  readonly agent: string;
  readonly budget: CallerBudget;
  requests: number;
  bodyBytes: number;
}

const USAGE = Symbol('usage');
const BODY_BYTES = Symbol('bodyBytes');
/** On a request whose body is counted as it arrives: its response, which carries the counts. */
const RESPONSE = Symbol('response');
type Counted = ServerResponse & { [USAGE]?: Usage; [BODY_BYTES]?: number };
type CountedRequest = IncomingMessage & { [RESPONSE]: Counted };

const callerBusy = (message: string) => new HttpError(429, 'caller_busy', { message });

/** The response is done (answered or cut off): what its request held is released. */
function release(this: Counted): void {
  const usage = this[USAGE]!;
  usage.requests--;
  usage.bodyBytes -= this[BODY_BYTES] ?? 0;
  if (usage.requests === 0) usage.budget.forget(usage.agent);
}

/** A chunk of a body without Content-Length, counted as it arrives. */
function countChunk(this: CountedRequest, chunk: Buffer): void {
  const res = this[RESPONSE];
  res[BODY_BYTES]! += chunk.length;
  res[USAGE]!.bodyBytes += chunk.length;
}

/**
 * Each caller's (agent's) share of the server: the requests and body bytes it has in flight, each
 * within a budget, so that one partner's flood (many slow bodies, many requests at once) leaves room
 * for everyone else; past it, 429 with Retry-After (RFC 6585, section 4). Internal actors (the data
 * holder, `internalAgents`) are not counted: they are the operator's own systems, which the budget
 * protects the server for, not from. Counting costs a request a Map lookup, two counters and a
 * listener on its response's 'close', whichever way it ends.
 */
export class CallerBudget {
  private readonly usages = new Map<string, Usage>();

  constructor(private readonly options: CallerBudgetOptions) {}

  /** Counts a request of `caller` from now until its response closes; false when the caller has no room for it (nothing counted). */
  enter(res: ServerResponse, caller: Caller): boolean {
    if (caller.internal) return true;
    let usage = this.usages.get(caller.agent);
    if (!usage) {
      usage = { agent: caller.agent, budget: this, requests: 0, bodyBytes: 0 };
      this.usages.set(caller.agent, usage);
    } else if (usage.requests >= this.options.requestsInFlight) return false;
    usage.requests++;
    (res as Counted)[USAGE] = usage;
    res.on('close', release);
    return true;
  }

  /** The answer to a request `enter` refused. */
  refusal(): HttpError {
    return callerBusy(`you have ${this.options.requestsInFlight} requests in flight, the most this server works on at once for one caller (limits.perCaller.requestsInFlight); retry once some are answered`);
  }

  /** Called by `release` once a caller has nothing in flight any more. */
  forget(agent: string): void {
    this.usages.delete(agent);
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
    const { bodyBytesInFlight } = usage.budget.options;
    if (usage.bodyBytes > 0 && usage.bodyBytes + declared > bodyBytesInFlight) {
      return callerBusy(`you have ${usage.bodyBytes} bytes of request bodies in flight; with this one's ${declared} that is more than this server holds at once for one caller (limits.perCaller.bodyBytesInFlight, ${bodyBytesInFlight}); retry once some are answered`);
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
