import { request as httpRequest, type IncomingHttpHeaders, type RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { lookup } from 'node:dns/promises';
import { createHash } from 'node:crypto';
import { Client, errors, util } from 'undici';
import { BoundedCache } from '../bounded-cache.js';
import { guardedLookup, isPublicAddress, OutboundRefusedError, privateAddressRefusal } from './address-guard.js';

export interface OutboundOptions {
  /** Allow loopback, private, link-local and metadata addresses (tests, local demos). */
  allowPrivateAddresses: boolean;
  /**
   * This server's own origin (scheme, host, port of its base URL): not an outside address, so
   * calls to it pass the guard (a subscriber hosted on this server), whatever its host resolves to.
   */
  ownOrigin?: string;
  /** Time to establish the connection (TCP and TLS). */
  connectTimeoutMs: number;
  /** Time for the whole exchange, from the start to the last byte of the answer. */
  timeoutMs: number;
}

export interface OutboundRequest {
  method: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
}

export interface OutboundResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** Why an outbound call failed before an answer came (timeouts, connection errors, refusal). */
export class OutboundError extends Error {
  constructor(
    readonly code:
      | 'outbound_address_refused'
      | 'outbound_connect_timeout'
      | 'outbound_timeout'
      | 'outbound_failed'
      | 'outbound_answer_too_large',
    message: string,
  ) {
    super(message);
  }
}

/** Answers larger than this are cut off (a subscriber's answer to a notification is tiny). */
const MAX_ANSWER_BYTES = 1024 * 1024;

/** Connections per origin for calls made in order; each lane keeps to one of them. */
const ORDERED_CONNECTIONS = 4;
const laneSlots = new BoundedCache<string, number>(100_000);
function laneSlot(lane: string): number {
  let slot = laneSlots.get(lane);
  if (slot === undefined) {
    slot = createHash('sha1').update(lane).digest().readUInt32BE(0) % ORDERED_CONNECTIONS;
    laneSlots.set(lane, slot);
  }
  return slot;
}

/** A call made in order that took longer than its time limit. */
class OrderedCallTimeout extends Error {}

/** Lets the maker of a call in order (`requestInOrder`) end it while it is under way. */
export class CallCancel {
  private stop?: (err: Error) => void;
  private reason?: Error;

  /** Ends the call, now or as soon as it starts: it fails with `reason`. */
  cancel(reason: Error = new Error('the call was cancelled')): void {
    this.reason ??= reason;
    this.stop?.(this.reason);
  }

  /** Used by `requestInOrder`: how to end the call (undefined once it has ended). */
  bind(stop: ((err: Error) => void) | undefined): void {
    this.stop = stop;
    if (stop && this.reason) stop(this.reason);
  }
}

/** An error of a call made in order to `target`, as an OutboundError. */
function orderedCallError(err: Error, target: { origin: string }): OutboundError {
  const refused =
    err instanceof OutboundRefusedError ? err : err.cause instanceof OutboundRefusedError ? err.cause : undefined;
  if (refused) return new OutboundError('outbound_address_refused', refused.message);
  if (err instanceof errors.ConnectTimeoutError)
    return new OutboundError('outbound_connect_timeout', `no connection to ${target.origin} within the time limit`);
  if (err instanceof errors.ResponseExceededMaxSizeError)
    return new OutboundError(
      'outbound_answer_too_large',
      `the answer of ${target.origin} is larger than ${MAX_ANSWER_BYTES} bytes`,
    );
  if (
    err instanceof OrderedCallTimeout ||
    err instanceof errors.HeadersTimeoutError ||
    err instanceof errors.BodyTimeoutError
  ) {
    return new OutboundError('outbound_timeout', `no complete answer from ${target.origin} within the time limit`);
  }
  return new OutboundError('outbound_failed', `${target.origin}: ${err.message}`);
}

/** Where calls made in order to one URL go: parsed once, as a queue calls the same URL again and again. */
interface OrderedTarget {
  origin: string;
  /** The request target: path and query. */
  path: string;
}

/** URLs whose `OrderedTarget` is kept (a subscriber's callback each, usually one per organisation). */
const ORDERED_TARGETS_KEPT = 10_000;

/**
 * The answer to a call made in order. Its headers and body are decoded only when read: a
 * notification's sender looks at the status alone unless the call failed.
 */
class OrderedAnswer implements OutboundResponse {
  private decodedHeaders?: IncomingHttpHeaders;
  private decodedBody?: string;

  constructor(
    readonly status: number,
    private readonly rawHeaders: Buffer[],
    private readonly chunks: Buffer[],
  ) {}

  get headers(): IncomingHttpHeaders {
    this.decodedHeaders ??= util.parseHeaders(this.rawHeaders) as IncomingHttpHeaders;
    return this.decodedHeaders;
  }

  get body(): string {
    this.decodedBody ??= Buffer.concat(this.chunks).toString('utf8');
    return this.decodedBody;
  }
}

/**
 * Every HTTP call this server makes to another party. Redirects are never followed (a 3xx is
 * handed back as it is); the connection and the whole exchange have their own time limits; unless
 * allowed, the address connected to must be public (checked after DNS, on the address itself).
 */
export class OutboundClient {
  /** Kept-alive connections of `requestInOrder`: per origin, one per slot (`laneSlot`). */
  private readonly connections = new Map<string, Client[]>();
  private readonly orderedTargets = new BoundedCache<string, OrderedTarget>(ORDERED_TARGETS_KEPT);

  constructor(private readonly options: OutboundOptions) {}

  /**
   * Why `url` may not be called (not http(s), or only refused addresses behind its name), or
   * undefined. A name that does not resolve now is not refused: calls to it retry.
   */
  async refusal(url: string): Promise<string | undefined> {
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      return `not a URL: ${url}`;
    }
    if (target.protocol !== 'http:' && target.protocol !== 'https:')
      return `only http and https URLs are called: ${url}`;
    if (!this.guarded(target.origin)) return undefined;
    const host = target.hostname.replace(/^\[|\]$/g, '');
    const addresses =
      isIP(host) !== 0
        ? [host]
        : await lookup(host, { all: true }).then(
            (found) => found.map((a) => a.address),
            () => [],
          );
    if (addresses.length > 0 && !addresses.some(isPublicAddress)) {
      return privateAddressRefusal(host, addresses);
    }
    return undefined;
  }

  /** Whether calls to `origin` must reach public addresses only. */
  private guarded(origin: string): boolean {
    return !this.options.allowPrivateAddresses && origin !== this.options.ownOrigin;
  }

  /** The URL to call, or why it may not be called without even a DNS lookup. */
  private target(url: string): URL | OutboundError {
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      return new OutboundError('outbound_failed', `not a URL: ${url}`);
    }
    if (target.protocol !== 'http:' && target.protocol !== 'https:')
      return new OutboundError('outbound_failed', `only http and https URLs are called: ${url}`);
    const host = target.hostname.replace(/^\[|\]$/g, '');
    if (this.guarded(target.origin) && isIP(host) !== 0 && !isPublicAddress(host)) {
      return new OutboundError(
        'outbound_address_refused',
        `${host} is a loopback, private, link-local or metadata address (outbound.allowPrivateAddresses)`,
      );
    }
    return target;
  }

  /**
   * Like `request`, for calls that must reach the other side in order within `lane` (a notification queue: ONE
   * Record API, "Events", Delivery model): a lane's calls are pipelined, up to `pipelining`, on one kept-alive
   * connection (docs/delivery.md, "How the outbox works"). A call not answered in time closes its connection (the
   * caller makes those behind it again); `cancel` ends it. Undici dispatch: no stream or signal per call.
   */
  requestInOrder(
    url: string,
    init: OutboundRequest,
    lane: string,
    pipelining: number,
    cancel?: CallCancel,
  ): Promise<OutboundResponse> {
    const target = this.orderedTarget(url);
    if (target instanceof OutboundError) return Promise.reject(target);
    let slots = this.connections.get(target.origin);
    if (!slots) {
      slots = [];
      this.connections.set(target.origin, slots);
    }
    const slot = laneSlot(lane);
    let client = slots[slot];
    if (!client) {
      // Idle, the connection stays open as long as the other side's `Keep-Alive: timeout` allows,
      // less undici's 2 s margin against a request crossing its close (4 s without the hint, at
      // most 10 minutes): to a server of ours (65 s) a queue's connection outlives the pauses
      // between bursts of notifications.
      client = new Client(target.origin, {
        pipelining,
        connect: {
          timeout: this.options.connectTimeoutMs,
          ...(this.guarded(target.origin) ? { lookup: guardedLookup } : {}),
        },
        headersTimeout: this.options.timeoutMs,
        bodyTimeout: this.options.timeoutMs,
        maxResponseSize: MAX_ANSWER_BYTES,
      });
      slots[slot] = client;
    }
    const dispatcher = client;
    return new Promise<OutboundResponse>((resolve, reject) => {
      let status = 0;
      let rawHeaders: Buffer[] = [];
      const chunks: Buffer[] = [];
      let done = false;
      /** Ends the exchange on the connection (given once the call is written to it). */
      let abort: ((err: Error) => void) | undefined;
      let stopped: Error | undefined;
      const finish = (err?: Error) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        cancel?.bind(undefined);
        if (err) reject(orderedCallError(err, target));
        else resolve(new OrderedAnswer(status, rawHeaders, chunks));
      };
      /**
       * A time limit or the caller: the call fails now; once (or if ever) it is on the connection, that exchange is
       * ended.
       */
      const stop = (err: Error) => {
        stopped ??= err;
        abort?.(err);
        finish(err);
      };
      // One timer per call, cleared when it ends.
      const timer = setTimeout(() => stop(new OrderedCallTimeout()), this.options.timeoutMs);
      try {
        dispatcher.dispatch(
          // Notifications carry an Idempotency-Key: they may be pipelined, and nothing on the way waits long.
          {
            path: target.path,
            method: init.method,
            headers: init.headers,
            body: init.body,
            idempotent: true,
            blocking: false,
          },
          {
            onConnect: (abortCall) => {
              abort = abortCall;
              if (stopped) abortCall(stopped);
            },
            onHeaders: (statusCode, headers) => {
              status = statusCode;
              rawHeaders = headers;
              return true;
            },
            onData: (chunk) => {
              chunks.push(chunk);
              return true;
            },
            onComplete: () => finish(),
            onError: (err) => finish(err),
          },
        );
      } catch (err) {
        finish(err as Error);
        return;
      }
      cancel?.bind(stop);
    });
  }

  /** `url` parsed for `requestInOrder` (kept once it may be called), or why it may not be called. */
  private orderedTarget(url: string): OrderedTarget | OutboundError {
    const known = this.orderedTargets.get(url);
    if (known) return known;
    const target = this.target(url);
    if (target instanceof OutboundError) return target;
    const parsed = { origin: target.origin, path: `${target.pathname}${target.search}` };
    this.orderedTargets.set(url, parsed);
    return parsed;
  }

  /** Closes the kept-alive connections of `requestInOrder`. */
  async close(): Promise<void> {
    const clients = [...this.connections.values()].flat();
    this.connections.clear();
    await Promise.all(clients.map((c) => c.destroy()));
  }

  request(url: string, init: OutboundRequest): Promise<OutboundResponse> {
    const target = this.target(url);
    if (target instanceof OutboundError) return Promise.reject(target);
    const requestOptions: RequestOptions = {
      method: init.method,
      headers: {
        ...init.headers,
        ...(init.body === undefined ? {} : { 'Content-Length': String(Buffer.byteLength(init.body)) }),
      },
      ...(this.guarded(target.origin) ? { lookup: guardedLookup as RequestOptions['lookup'] } : {}),
    };
    const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise<OutboundResponse>((resolve, reject) => {
      let settled = false;
      const fail = (error: OutboundError) => {
        if (settled) return;
        settled = true;
        clearTimeout(total);
        clearTimeout(connect);
        req.destroy();
        reject(error);
      };
      const req = send(target, requestOptions, (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_ANSWER_BYTES)
            fail(
              new OutboundError(
                'outbound_answer_too_large',
                `the answer of ${target.origin} is larger than ${MAX_ANSWER_BYTES} bytes`,
              ),
            );
          else chunks.push(chunk);
        });
        res.on('end', () => {
          if (settled) return;
          settled = true;
          clearTimeout(total);
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') });
        });
        res.on('error', (err) => fail(new OutboundError('outbound_failed', err.message)));
      });
      const total = setTimeout(
        () =>
          fail(
            new OutboundError(
              'outbound_timeout',
              `no complete answer from ${target.origin} within ${this.options.timeoutMs} ms`,
            ),
          ),
        this.options.timeoutMs,
      );
      const connect = setTimeout(
        () =>
          fail(
            new OutboundError(
              'outbound_connect_timeout',
              `no connection to ${target.origin} within ${this.options.connectTimeoutMs} ms`,
            ),
          ),
        this.options.connectTimeoutMs,
      );
      req.on('socket', (socket) => {
        const connected = () => clearTimeout(connect);
        if (!socket.connecting) connected();
        else socket.once(target.protocol === 'https:' ? 'secureConnect' : 'connect', connected);
      });
      req.on('error', (err) => {
        if (err instanceof OutboundRefusedError) fail(new OutboundError('outbound_address_refused', err.message));
        else fail(new OutboundError('outbound_failed', `${target.origin}: ${err.message}`));
      });
      req.end(init.body);
    });
  }
}
