import { Agent, request, type Dispatcher } from 'undici';
import type { SparqlJsonResults } from '../readers.js';
import { StoreFailedError, StoreUnavailableError } from '../errors.js';
import { DigestCredentials, parseDigestChallenge } from './digest-auth.js';

export interface SparqlClientOptions {
  queryUrl: string;
  updateUrl: string;
  auth?: { user: string; password: string; scheme: 'basic' | 'digest' } | { token: string };
  /** Time for one request, from sending it to the last byte of the answer. */
  timeoutMs: number;
  /** Connections to the engine at most (requests beyond wait for one). */
  connections?: number;
  /**
   * Also send `timeoutMs` with each query as its `timeout` parameter (milliseconds: Virtuoso,
   * Fuseki), so that the engine stops a query itself rather than run on after the client gave up.
   */
  engineTimeout?: boolean;
}

const DEFAULT_CONNECTIONS = 16;
/**
 * Shorter than the KeepAliveTimeout our Virtuoso is started with: the client lets an idle connection go
 * first.
 */
const KEEP_ALIVE_MS = 4_000;

/**
 * The connection ended before an answer came: a query may be asked again; an update may or may not have been applied.
 */
class ConnectionLostError extends StoreUnavailableError {}

const RESULTS_JSON = 'application/sparql-results+json';
/** SQLSTATEs of a transaction the engine ended and rolled back as a deadlock's victim. */
const DEADLOCK = /^(SR172|40001)$/;

/** The engine rolled the request back to end a deadlock: nothing of it was applied, and it may be sent again. */
export class EngineDeadlockError extends StoreUnavailableError {}
/** The request ran past its time: the client gave up, or the engine cut the query short (a partial result). */
export class EngineTimeoutError extends StoreUnavailableError {}
/** The SQLSTATE Virtuoso sends with a partial result when a query ran past its `timeout`. */
const QUERY_TIMED_OUT = 'S1TAT';
const N_TRIPLES = 'application/n-triples';
/** Virtuoso repeats the whole request after its message: only its start goes into an error. */
const MESSAGE_CHARS = 1_000;
/** How Virtuoso starts the text of its own errors, naming their SQLSTATE. */
const ENGINE_ERROR = /^Virtuoso ([0-9A-Z]{5}) Error/;

/** An answer of the engine, its body not read yet. */
type Answer = Dispatcher.ResponseData;

const header = (answer: Answer, name: string): string | undefined => {
  const value = answer.headers[name];
  return Array.isArray(value) ? value[0] : value;
};

/**
 * The SPARQL 1.1 Protocol over HTTP, with undici's `request` on keep-alive connections (cheaper in CPU
 * than its `fetch`). An engine out of reach, timing out or unavailable rejects with
 * StoreUnavailableError (a later request may succeed); one that refuses the request (syntax,
 * permission, credentials, a failing expression) with StoreFailedError carrying the engine's message.
 */
export class SparqlClient {
  private readonly digest: DigestCredentials | undefined;
  private challengeAsked: Promise<void> | undefined;

  /**
   * At most this many connections, kept alive: Virtuoso closes any past its MaxKeepAlives after
   * answering, and a request sent on such a connection meets "other side closed".
   */
  private readonly connections: Agent;

  constructor(private readonly options: SparqlClientOptions) {
    this.connections = new Agent({
      connections: options.connections ?? DEFAULT_CONNECTIONS,
      keepAliveTimeout: KEEP_ALIVE_MS,
    });
    const auth = options.auth;
    this.digest =
      auth && 'user' in auth && auth.scheme === 'digest' ? new DigestCredentials(auth.user, auth.password) : undefined;
  }

  async select(query: string): Promise<SparqlJsonResults> {
    const url = this.options.queryUrl;
    const answer = parseJson(url, await this.query(query, RESULTS_JSON)) as Partial<SparqlJsonResults>;
    if (!Array.isArray(answer.head?.vars) || !Array.isArray(answer.results?.bindings))
      throw new StoreFailedError(
        `the SPARQL engine at ${url} answered a SELECT without head.vars and results.bindings`,
      );
    // SPARQL 1.0's JSON (Virtuoso's) marks datatyped literals "typed-literal"; 1.1 says "literal".
    for (const binding of answer.results.bindings) {
      for (const term of Object.values(binding)) if (term.type === 'typed-literal') term.type = 'literal';
    }
    return answer as SparqlJsonResults;
  }

  async ask(query: string): Promise<boolean> {
    const url = this.options.queryUrl;
    const answer = parseJson(url, await this.query(query, RESULTS_JSON)) as { boolean?: unknown };
    if (typeof answer.boolean !== 'boolean')
      throw new StoreFailedError(`the SPARQL engine at ${url} answered an ASK without a boolean`);
    return answer.boolean;
  }

  /** The graph a CONSTRUCT or DESCRIBE builds, as N-Triples. */
  construct(query: string): Promise<string> {
    return this.query(query, N_TRIPLES);
  }

  /** Runs an update; answers the engine's answer as it came (Virtuoso's counts what each operation did in it). */
  update(text: string): Promise<string> {
    return this.send(
      this.options.updateUrl,
      'application/sparql-update; charset=UTF-8',
      text,
      `${RESULTS_JSON}, */*;q=0.1`,
    );
  }

  // Queries are POSTed as a form, the protocol's other way: Virtuoso 7.2 never answers a query
  // POSTed as application/sparql-query (openlink/virtuoso-opensource#842).
  // A query that met a connection the engine had just closed is asked again, once: it changes nothing.
  private async query(query: string, accept: string): Promise<string>;
  private async query<T>(
    query: string,
    accept: string,
    read: (answer: Answer) => Promise<T>,
    timeoutMs?: number,
  ): Promise<T>;
  private async query(
    query: string,
    accept: string,
    read: (answer: Answer) => Promise<unknown> = (answer) => answer.body.text(),
    timeoutMs = this.options.timeoutMs,
  ): Promise<unknown> {
    const form = new URLSearchParams({ query });
    if (this.options.engineTimeout) form.set('timeout', String(timeoutMs));
    const send = () =>
      this.exchange(
        this.options.queryUrl,
        'application/x-www-form-urlencoded',
        form.toString(),
        accept,
        read,
        timeoutMs,
      );
    try {
      return await send();
    } catch (err) {
      if (!(err instanceof ConnectionLostError)) throw err;
      return send();
    }
  }

  private send(url: string, contentType: string, body: string, accept: string): Promise<string> {
    return this.exchange(url, contentType, body, accept, (answer) => answer.body.text(), this.options.timeoutMs);
  }

  /** Sends a request and hands its answer to `read` once it is known to be a success, all within `timeoutMs`. */
  private async exchange<T>(
    url: string,
    contentType: string,
    body: string,
    accept: string,
    read: (answer: Answer) => Promise<T>,
    timeoutMs: number,
  ): Promise<T> {
    const signal = AbortSignal.timeout(timeoutMs);
    const headers = { 'Content-Type': contentType, Accept: accept };
    try {
      let answer = await this.post(url, headers, body, signal);
      if (answer.statusCode === 401 && this.acceptChallenge(answer)) {
        // The nonce went stale: answer the new challenge, once.
        await answer.body.dump();
        answer = await this.post(url, headers, body, signal);
      }
      if (answer.statusCode < 200 || answer.statusCode > 299)
        throw refusal(url, answer.statusCode, await answer.body.text());
      // Virtuoso answers 200 and puts the error in these headers when a deadlock ended the request
      // (SR172) or its query time limit cut a query short (a partial result).
      const sqlMessage = header(answer, 'x-sql-message');
      if (sqlMessage) {
        await answer.body.dump();
        const state = header(answer, 'x-sql-state') ?? '';
        const message = `the SPARQL engine at ${url} did not complete the request: ${state} ${sqlMessage}`;
        // Virtuoso 7.2 sends a deadlock's state in the message at times, with state 00000.
        if (DEADLOCK.test(state) || DEADLOCK.test(sqlMessage.split(':')[0].trim()))
          throw new EngineDeadlockError(message);
        throw state === QUERY_TIMED_OUT ? new EngineTimeoutError(message) : new StoreUnavailableError(message);
      }
      return await read(answer);
    } catch (err) {
      if (err instanceof StoreFailedError || err instanceof StoreUnavailableError) throw err;
      throw unreachable(url, err, timeoutMs);
    }
  }

  private async post(url: string, headers: Record<string, string>, body: string, signal: AbortSignal): Promise<Answer> {
    const authorization = await this.authorization(url, signal);
    return request(url, {
      method: 'POST',
      headers: authorization ? { ...headers, Authorization: authorization } : headers,
      body,
      signal,
      dispatcher: this.connections,
    });
  }

  private async authorization(url: string, signal: AbortSignal): Promise<string | undefined> {
    const auth = this.options.auth;
    if (!auth) return undefined;
    if ('token' in auth) return `Bearer ${auth.token}`;
    if (auth.scheme === 'basic') return `Basic ${Buffer.from(`${auth.user}:${auth.password}`).toString('base64')}`;
    const digest = this.digest!;
    if (!digest.hasChallenge) await this.challenge(url, signal);
    if (!digest.hasChallenge) return undefined;
    const target = new URL(url);
    return digest.authorization('POST', target.pathname + target.search);
  }

  /** One challenge asked at a time: the requests that need it meanwhile wait for the same answer. */
  private challenge(url: string, signal: AbortSignal): Promise<void> {
    this.challengeAsked ??= this.askChallenge(url, signal).finally(() => {
      this.challengeAsked = undefined;
    });
    return this.challengeAsked;
  }

  /**
   * The first challenge comes from a GET without a body: Virtuoso closes the connection on a 401, possibly before
   * reading a large body.
   */
  private async askChallenge(url: string, signal: AbortSignal): Promise<void> {
    const answer = await request(url, { method: 'GET', signal, dispatcher: this.connections });
    await answer.body.dump();
    this.acceptChallenge(answer);
  }

  private acceptChallenge(answer: Answer): boolean {
    const challenge = this.digest && parseDigestChallenge(header(answer, 'www-authenticate'));
    if (challenge) this.digest!.accept(challenge);
    return challenge !== undefined;
  }
}

function parseJson(url: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new StoreFailedError(`the SPARQL engine at ${url} answered something other than JSON: ${text.slice(0, 200)}`);
  }
}

function engineMessage(body: string): string {
  return body
    .split(/\n\s*SPARQL query:/)[0]
    .trim()
    .slice(0, MESSAGE_CHARS);
}

/**
 * Virtuoso answers 500 to errors of the request itself too (a failing cast, a missing grant), naming
 * their SQLSTATE: only those of the classes a retry may cure (40: deadlock, 08: connection,
 * S1T00/HYT: timeouts), and 5xx without an engine message, mean the engine is unavailable.
 */
function refusal(url: string, status: number, body: string): Error {
  const message = engineMessage(body);
  if (status === 401 || status === 403)
    return new StoreFailedError(`the SPARQL engine at ${url} refused the credentials (${status}) ${message}`.trim());
  if (status < 500)
    return new StoreFailedError(`the SPARQL engine at ${url} refused the request (${status}): ${message}`);
  const sqlState = ENGINE_ERROR.exec(body)?.[1];
  if (sqlState !== undefined && !/^(40|08|S1T|HYT)/.test(sqlState))
    return new StoreFailedError(`the SPARQL engine at ${url} failed the request (${status}): ${message}`);
  if (sqlState !== undefined && DEADLOCK.test(sqlState))
    return new EngineDeadlockError(`the SPARQL engine at ${url} rolled the request back to end a deadlock: ${message}`);
  return new StoreUnavailableError(`the SPARQL engine at ${url} is unavailable (${status}): ${message}`);
}

function unreachable(url: string, err: unknown, timeoutMs: number): StoreUnavailableError {
  if (err instanceof Error && err.name === 'TimeoutError')
    return new EngineTimeoutError(`the SPARQL engine at ${url} did not answer within ${timeoutMs} ms`);
  const failure = err instanceof Error ? (err.cause instanceof Error ? err.cause : err) : undefined;
  const message = `the SPARQL engine at ${url} could not be reached: ${failure?.message ?? String(err)}`;
  // undici's SocketError: a kept-alive connection the engine closed as the request went out.
  return failure?.name === 'SocketError' ? new ConnectionLostError(message) : new StoreUnavailableError(message);
}
