import { once } from 'node:events';
import { createServer, type RequestListener, type Server } from 'node:http';
import type { Lifecycle } from '../observability/health.js';

/**
 * The HTTP listener of one port. It listens before the store is loaded, so health probes are
 * answered during a long start (`starting`), serves the application once it is handed over
 * (`serve`), and drains on shutdown: no new connections, requests in flight finish (each answer
 * closes its connection), and whatever still runs after the grace period is cut.
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
    const server = createServer((req, res) => {
      lifecycle.requestsInFlight += 1;
      res.once('close', () => (lifecycle.requestsInFlight -= 1));
      if (lifecycle.phase === 'stopping') res.setHeader('Connection', 'close');
      listener!.handler(req, res);
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
