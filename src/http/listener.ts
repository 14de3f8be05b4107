import { once } from 'node:events';
import { createServer, type RequestListener, type Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Lifecycle } from '../observability/health.js';

/**
 * The HTTP listener of one port. It listens before the store is loaded, so health probes are
 * answered during a long start (`starting`), serves the application once it is handed over
 * (`serve`), and drains on shutdown: no new connections, requests in flight finish (each answer
 * closes its connection), and whatever still runs after the grace period is cut. Requests
 * pipelined on one connection are handled one after the other, in the order they arrived.
 */
export class Listener {
  private handler: RequestListener;

  private constructor(
    private readonly server: Server,
    private readonly lifecycle: Lifecycle,
    initial: RequestListener,
  ) {
    this.handler = initial;
  }

  static async open(port: number, host: string, lifecycle: Lifecycle, initial: RequestListener): Promise<Listener> {
    let listener: Listener | undefined;
    // Per connection, the answer of the last request that came on it.
    const answered = new WeakMap<Socket, Promise<void>>();
    const server = createServer((req, res) => {
      lifecycle.requestsInFlight += 1;
      const done = new Promise<void>((resolve) => res.once('close', resolve)).then(() => void (lifecycle.requestsInFlight -= 1));
      // A pipelined request waits for the one before it on its connection (HTTP/1.1 answers them in
      // that order anyway): requests are handled in the order they arrived, as a publisher that
      // pipelines a queue's notifications relies on.
      const before = answered.get(req.socket);
      answered.set(req.socket, done);
      const handle = () => {
        if (lifecycle.phase === 'stopping') res.setHeader('Connection', 'close');
        listener!.handler(req, res);
      };
      if (before) void before.then(handle);
      else handle();
    });
    listener = new Listener(server, lifecycle, initial);
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
