import { once } from 'node:events';
import { createServer, type RequestListener, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Lifecycle } from '../observability/health.js';

/** An answer not yet closed on its connection, and the request to handle once it is. */
interface Answering {
  res: ServerResponse;
  next: (() => void) | undefined;
}

/**
 * The HTTP listener of one port: it listens before the store loads, so health probes are answered during a long
 * start, serves the app once handed over and drains on shutdown (docs/operations.md, "Shutdown"). Pipelined
 * requests are handled one after another, none behind an answer that closes the connection (RFC 9112, 9.6), which
 * keeps notifications in order (ONE Record API, "Events", Delivery model).
 */
export class Listener {
  private handler: RequestListener;

  private constructor(
    private readonly server: Server,
    private readonly lifecycle: Lifecycle,
    initial: RequestListener,
    /** Responses not yet finished. */
    private readonly answering: Set<ServerResponse>,
  ) {
    this.handler = initial;
  }

  /** `keepAliveTimeoutMs`: how long an idle kept-alive connection stays open (Node's default, 5 s, unless given). */
  static async open(
    port: number,
    host: string,
    lifecycle: Lifecycle,
    initial: RequestListener,
    keepAliveTimeoutMs?: number,
  ): Promise<Listener> {
    let listener: Listener | undefined;
    // Per connection with an answer still to finish: the last request that came on it, and what
    // waits for its answer to close (the request pipelined behind it).
    const last = new WeakMap<Socket, Answering>();
    const answering = new Set<ServerResponse>();
    const server = createServer((req, res) => {
      lifecycle.requestsInFlight += 1;
      answering.add(res);
      const socket = req.socket;
      const before = last.get(socket);
      const current: Answering = { res, next: undefined };
      last.set(socket, current);
      // A listener, not a promise per request: this runs on every request, and a pipelined one is
      // rare. `on`, not `once`: a response emits 'close' once, and `once` wraps and unhooks each time.
      res.on('close', () => {
        lifecycle.requestsInFlight -= 1;
        answering.delete(res);
        lifecycle.lastAnsweredAt = performance.now();
        // Its connection has nothing left to answer: the next request on it is handled at once.
        if (last.get(socket) === current) last.delete(socket);
        // After the other close listeners (request log, metrics), as before.
        if (current.next) queueMicrotask(current.next);
      });
      const handle = () => {
        // Behind an answer that closed the connection, nothing is handled (RFC 9112, 9.6): the
        // client sends it again, after what failed before it.
        if (!socket.writable) return;
        if (lifecycle.phase === 'stopping') res.setHeader('Connection', 'close');
        listener!.handler(req, res);
      };
      // A pipelined request waits for the one before it on its connection (HTTP/1.1 answers them in
      // that order anyway): requests are handled in the order they arrived, as a publisher that
      // pipelines a queue's notifications relies on.
      if (before) before.next = handle;
      else handle();
    });
    // Node times a request's headers (`headersTimeout`, 60 s) and the whole request
    // (`requestTimeout`, 300 s) from its first byte; an idle connection waiting for one is not
    // timed by them, so a keep-alive time past 60 s needs neither raised.
    if (keepAliveTimeoutMs !== undefined) server.keepAliveTimeout = keepAliveTimeoutMs;
    // An idle kept-alive connection is closed when its time is up, unless a request came on it
    // meanwhile. After the process was busy past that time (a long commit, a GC), the timer runs
    // before what arrived during it is read: closing then would reset a client whose request was
    // already sent (ECONNRESET, and it cannot tell whether a PATCH was applied). What arrived is
    // read before an immediate runs, so the connection is closed only if nothing did.
    server.on('timeout', (socket: Socket) => {
      const read = socket.bytesRead;
      setImmediate(() => {
        if (socket.bytesRead === read) socket.destroy();
      });
    });
    listener = new Listener(server, lifecycle, initial, answering);
    server.listen(port, host);
    await once(server, 'listening');
    return listener;
  }

  get url(): string {
    const address = this.server.address();
    if (!address || typeof address === 'string') throw new Error('not listening on a TCP port');
    const host = address.address.includes(':') ? `[${address.address}]` : address.address;
    return `http://${host}:${address.port}`;
  }

  serve(app: RequestListener): void {
    this.handler = app;
  }

  /** Stops accepting, lets requests in flight finish for up to `graceMs`, then cuts what is left. */
  async drain(graceMs: number): Promise<void> {
    this.lifecycle.phase = 'stopping';
    // Answers still to come close their connections too: left open, an idle connection would keep
    // the drain waiting until the grace period is over (the keep-alive time is longer).
    for (const res of this.answering) if (!res.headersSent) res.setHeader('Connection', 'close');
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeIdleConnections();
    let timer: NodeJS.Timeout | undefined;
    const graceOver = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, graceMs);
    });
    await Promise.race([closed, graceOver]);
    clearTimeout(timer);
    this.server.closeAllConnections();
    await closed;
  }
}
