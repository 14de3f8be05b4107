import type { ConfigOverrides } from '../../src/config.js';
import { freePort, startTestServer, type TestServer } from './server.js';

/**
 * `count` real servers on loopback, each with its own data directory and embedded identity
 * provider, each trusting the others' issuers (as partner servers are set up), with outbound
 * calls to loopback allowed. `overrides(i, urls)` adds per-server configuration (`urls`: every
 * peer's base URL, known before any starts).
 */
export async function startPeers(
  count: number,
  overrides: (i: number, urls: string[]) => ConfigOverrides = () => ({}),
): Promise<TestServer[]> {
  const ports: number[] = [];
  while (ports.length < count) {
    const port = await freePort();
    if (!ports.includes(port)) ports.push(port);
  }
  const base = (port: number) => `http://127.0.0.1:${port}`;
  const urls = ports.map(base);
  return Promise.all(
    ports.map((port, i) => {
      const own = overrides(i, urls);
      return startTestServer({
        ...own,
        outbound: { allowPrivateAddresses: true, ...own.outbound },
        port,
        baseUrl: base(port),
        trustedIssuers: ports
          .filter((p) => p !== port)
          .map((p) => ({ issuer: `${base(p)}/idp`, jwksUrl: `${base(p)}/idp/.well-known/jwks.json` })),
      });
    }),
  );
}

/** The data holder Organization of a server at `url`: the agent its outbound calls speak for. */
export const holderAt = (url: string) => `${url}/logistics-objects/data-holder`;
export const holderOf = (server: TestServer) => holderAt(server.url);
