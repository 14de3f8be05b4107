import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';

/** A loopback HTTP server that counts the requests it gets (to prove nobody called it). */
export interface LoopbackListener {
  url: string;
  requests: number;
  close(): Promise<void>;
}

export async function startListener(
  handler: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => {
    res.writeHead(200, { 'Content-Type': 'application/ld+json' }).end('{"@context": {}}');
  },
): Promise<LoopbackListener> {
  const listener = { url: '', requests: 0 } as LoopbackListener;
  const server = createServer((req, res) => {
    listener.requests += 1;
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  listener.url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  listener.close = async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return listener;
}
