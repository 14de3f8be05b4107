// The API tests through a cluster (TEST_STORE_BACKEND=cluster, `npm run test:cluster`): each test
// server is three server processes over one Virtuoso (store.sparql.sharedWriters), behind nginx
// taking them in turn, so consecutive requests of a test reach different processes.
import { rm } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { shareIdentityProvider } from '../../src/auth/identity-provider.js';
import type { ConfigOverrides } from '../../src/config.js';
import { startBalancer, type Balancer } from './balancer.js';
import type { Requester } from './changes.js';
import type { TestServer } from './server.js';
import { leaseEngine, releaseEngine, engineSettings } from './virtuoso.js';

export const CLUSTER_PROCESSES = 3;

/** Requests to the server at `url` itself with `token`: a path, or an IRI under the base URL, sent to that address. */
export const direct = (url: string, token: string): Requester => ({
  request: (path, init = {}) => {
    const headers = new Headers(init.headers);
    if (!headers.has('Authorization')) headers.set('Authorization', `Bearer ${token}`);
    const { pathname, search } = new URL(path, url);
    return fetch(`${url}${pathname}${search}`, { ...init, headers });
  },
});

/** A free loopback port, held (listened on) until `release`: so that no server picks it before the balancer takes it. */
export async function holdPort(): Promise<{ port: number; release(): Promise<void> }> {
  const held = createServer();
  await new Promise<void>((resolve) => held.listen(0, '127.0.0.1', resolve));
  return {
    port: (held.address() as AddressInfo).port,
    release: () => new Promise<void>((resolve) => held.close(() => resolve())),
  };
}

type StartServer = (overrides: ConfigOverrides, existingDataDir?: string) => Promise<TestServer>;

/**
 * A test server that is CLUSTER_PROCESSES servers (started by `start`) behind a balancer: its `url`
 * is the balancer's, the base URL of all of them; `running` is the first process's (a test that
 * reaches into the server reaches into that one); `dataDir` is the first's, the engine is leased by it.
 */
export async function startTestCluster(
  start: StartServer,
  overrides: ConfigOverrides,
  dataDir: string,
  ownsDataDir: boolean,
): Promise<TestServer> {
  const engine = await leaseEngine(dataDir);
  const sparql = {
    ...engineSettings(engine),
    sharedWriters: true,
  };
  // The balancer's port (a test that restarts "the server" on its port and base URL names it),
  // else a free one, held until the balancer takes it so that no process picks it meanwhile.
  const { port: named, ...forEach } = overrides;
  const held = named === undefined ? await holdPort() : undefined;
  const port = named ?? held!.port;
  const withCluster: ConfigOverrides = {
    ...forEach,
    baseUrl: overrides.baseUrl ?? `http://127.0.0.1:${port}`,
    store: { ...overrides.store, backend: 'sparql', sparql: { ...sparql, ...overrides.store?.sparql } },
  };
  const servers = [await start(withCluster, dataDir)];
  for (let i = 1; i < CLUSTER_PROCESSES; i++) {
    // One token issuer key for all: a token from any process is good at every other.
    const dir = join(dataDir, `process-${i + 1}`);
    await shareIdentityProvider(dataDir, dir);
    servers.push(await start(withCluster, dir));
  }
  await held?.release();
  let balancer: Balancer = await startBalancer({ port, upstreams: servers.map((s) => new URL(s.url).host) });
  const [first] = servers;
  return {
    get url() {
      return balancer.url;
    },
    dataDir,
    get running() {
      return first.running;
    },
    token: (agent) => first.token(agent),
    request: (path, init) => first.request(path.startsWith('http') ? path : `${balancer.url}${path}`, init),
    // Stopped, the cluster's address is free too, as a stopped server's is.
    async stop() {
      await balancer.stop();
      for (const server of servers) await server.stop();
    },
    async restart() {
      for (const server of servers) await server.restart();
      balancer = await startBalancer({ port, upstreams: servers.map((s) => new URL(s.url).host) });
    },
    async close() {
      await balancer.stop().catch(() => {});
      for (const server of servers.slice(1).reverse()) await server.close();
      await first.running.close().catch(() => {});
      await releaseEngine(dataDir);
      if (ownsDataDir) await rm(dataDir, { recursive: true, force: true });
    },
  };
}
