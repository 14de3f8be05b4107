import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, type ConfigOverrides } from '../../src/config.js';
import { iriToNt } from '../../src/rdf/terms.js';
import { startServer, type RunningServer } from '../../src/server.js';
import type { SparqlReader } from '../../src/store/readers.js';
import { LEASES_GRAPH } from '../../src/store/sparql-engine/engine-lease.js';
import { PROCESSES_GRAPH } from '../../src/store/sparql-engine/process-liveness.js';
import { noteSecret, testLogger } from './log-sink.js';
import { startTestCluster } from './cluster.js';
import { leaseEngine, releaseEngine, engineSettings } from './virtuoso.js';

/**
 * The store backend the API tests run on: `embedded` (default), or `sparql` (TEST_STORE_BACKEND=sparql,
 * `npm run test:engine`): each test server then keeps its data in a Virtuoso of its own, reached with
 * Digest authentication, leased by its data directory (a restart on the same directory finds its data);
 * or `cluster` (`npm run test:cluster`): each test server is three processes over such a Virtuoso
 * behind nginx (cluster.ts).
 */
export const TEST_STORE_BACKEND =
  process.env.TEST_STORE_BACKEND === 'sparql' || process.env.TEST_STORE_BACKEND === 'cluster'
    ? process.env.TEST_STORE_BACKEND
    : 'embedded';

async function storeOverrides(dataDir: string, overrides: ConfigOverrides): Promise<ConfigOverrides> {
  // A test that names its backend gets that one.
  if (TEST_STORE_BACKEND === 'embedded' || overrides.store?.backend !== undefined) return overrides;
  const engine = await leaseEngine(dataDir);
  const sparql = {
    ...engineSettings(engine),
  };
  // The engine suite runs with an object cache of one object, so that every read of an object finds it in the engine
  // (ObjectCatalog), as a process that has just started does.
  const cache = TEST_STORE_BACKEND === 'sparql' ? { objectBytes: 1, ...overrides.cache } : overrides.cache;
  return { ...overrides, cache, store: { ...overrides.store, backend: 'sparql', sparql } };
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export const OTHER_AGENT = 'https://partner.example.com/logistics-objects/partner-org';

export interface TestServer {
  url: string;
  dataDir: string;
  running: RunningServer;
  /** A real token from the embedded identity provider's token endpoint. */
  token(agent?: 'holder' | 'other'): Promise<string>;
  /** fetch against the server with a bearer token (holder by default). */
  request(path: string, init?: RequestInit & { agent?: 'holder' | 'other' | 'none' }): Promise<Response>;
  stop(): Promise<void>;
  restart(): Promise<void>;
  close(): Promise<void>;
}

/** Starts a real server on a loopback port with a fresh data directory. */
export async function startTestServer(overrides: ConfigOverrides = {}, existingDataDir?: string): Promise<TestServer> {
  const dataDir = existingDataDir ?? (await mkdtemp(join(tmpdir(), 'onerecord-test-')));
  // A test that names its backend gets that one.
  if (TEST_STORE_BACKEND === 'cluster' && overrides.store?.backend === undefined)
    return startTestCluster(startTestServer, overrides, dataDir, existingDataDir === undefined);
  const port = await freePort();
  const config = loadConfig(
    {},
    {
      port,
      host: '127.0.0.1',
      baseUrl: `http://127.0.0.1:${port}`,
      dataDir,
      ...(await storeOverrides(dataDir, overrides)),
      identityProvider: {
        clients: [{ id: 'partner', secret: 'partner-secret', agent: OTHER_AGENT }],
        ...(overrides.identityProvider ?? {}),
      },
    },
  );
  let running = await startServer(config, testLogger());
  noteSecret('partner-secret');
  const devClient = running.services.identityProvider?.devClient;
  if (devClient) noteSecret(devClient.secret);
  const tokens = new Map<string, string>();
  const token = async (agent: 'holder' | 'other' = 'holder') => {
    const cached = tokens.get(agent);
    if (cached) return cached;
    const idp = running.services.identityProvider!;
    const credentials = agent === 'holder' ? idp.devClient : { id: 'partner', secret: 'partner-secret' };
    const res = await fetch(`${running.url}/idp/token`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: credentials.id,
        client_secret: credentials.secret,
      }),
    });
    if (res.status !== 200) throw new Error(`token request failed: ${res.status} ${await res.text()}`);
    const value = ((await res.json()) as { access_token: string }).access_token;
    tokens.set(agent, value);
    noteSecret(value);
    return value;
  };
  const server: TestServer = {
    get url() {
      return running.url;
    },
    dataDir,
    get running() {
      return running;
    },
    token,
    async request(path, init = {}) {
      const headers = new Headers(init.headers);
      const agent = init.agent ?? 'holder';
      if (agent !== 'none' && !headers.has('Authorization'))
        headers.set('Authorization', `Bearer ${await token(agent)}`);
      return fetch(path.startsWith('http') ? path : `${running.url}${path}`, { ...init, headers });
    },
    async stop() {
      await running.close();
    },
    async restart() {
      running = await startServer(config, testLogger());
    },
    async close() {
      await running.close().catch(() => {});
      if (existingDataDir) return;
      await rm(dataDir, { recursive: true, force: true });
      await releaseEngine(dataDir);
    },
  } as TestServer;
  return server;
}

/**
 * How many quads the store holds (in its named graphs), whichever the backend: what a refused write
 * must leave unchanged. Not the engine's leases and heartbeats, which its processes write on their
 * own clocks (a lease claims its next term every half term, whatever the requests do).
 */
export async function storedQuads(server: TestServer): Promise<number> {
  return quadsStoredIn(server.running.store);
}

/** `storedQuads` of a store or an engine read directly. */
export async function quadsStoredIn(store: SparqlReader): Promise<number> {
  const answer = await store.select(
    `SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } FILTER (?g NOT IN (${iriToNt(LEASES_GRAPH)}, ${iriToNt(PROCESSES_GRAPH)})) }`,
  );
  return Number(answer.results.bindings[0].n.value);
}

export async function postJsonLd(
  server: Pick<TestServer, 'request'>,
  path: string,
  body: unknown,
  agent: 'holder' | 'other' = 'holder',
): Promise<Response> {
  return server.request(path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/ld+json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    agent,
  });
}
