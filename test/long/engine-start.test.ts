import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { ServerProcess } from '../support/server-process.js';
import { freePort } from '../support/server.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { leaseEngine, releaseEngine, type EngineConnection } from '../support/virtuoso.js';

// A server process on the SPARQL engine backend whose engine cannot be reached when it starts: a
// process of its own (its start is what is tested), the engine behind a TCP proxy the test opens late.

const engineStore = (engine: EngineConnection, sparql: string) => ({
  backend: 'sparql' as const,
  sparql: {
    queryUrl: sparql,
    updateUrl: sparql,
    user: engine.user,
    password: engine.password,
    authScheme: 'digest' as const,
  },
});

describe('an engine not reachable when the server starts', () => {
  const key = `unreachable-${process.pid}`;
  let dataDir: string;
  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'onerecord-engine-unreachable-'));
  });
  after(async () => {
    await releaseEngine(key);
    await rm(dataDir, { recursive: true, force: true });
  });

  it('the server answers 503 and tries again until the engine answers, then serves (a service manager may start the engine after it)', async () => {
    const engine = await leaseEngine(key);
    const upstream = new URL(engine.authUrl);
    // The engine's address as the server knows it: nothing listens there yet.
    const enginePort = await freePort();
    const sparql = `http://127.0.0.1:${enginePort}${upstream.pathname}`;
    const port = await freePort();
    const server = new ServerProcess({ dataDir, port, config: { store: engineStore(engine, sparql) } });
    let proxy: TcpProxy | undefined;
    try {
      for (
        const deadline = Date.now() + 20_000;
        !server.log.some((line) => line.startsWith('the SPARQL engine cannot be read: starting again')) &&
        Date.now() < deadline;
      ) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(server.exit, server.log.join('\n')).to.deep.equal({ code: null, signal: null });
      const starting = await fetch(`http://127.0.0.1:${port}/logistics-objects`);
      expect(starting.status).to.equal(503);
      proxy = await startTcpProxy(upstream.hostname, Number(upstream.port), enginePort);
      const { url } = await server.ready;
      const holder = await server.request('/');
      expect(holder.status, url).to.equal(200);
    } finally {
      await server.stop('SIGTERM');
      await proxy?.cut();
    }
  });
});
