/**
 * A benchmark target, run as its own process so the load generator does not share its event loop:
 *   node dist/scripts/bench/targets.js <bare-http|bare-express|bare-express-static|onerecord|analytics> [bodyBytes]
 * Prints one JSON line with what the driver needs, then serves until killed.
 * The onerecord target logs nothing unless BENCH_LOG_LEVEL is set (lines then go to /dev/null, so
 * their cost is measured without the disk); metrics are on (a metrics token is set) unless BENCH_METRICS=off;
 * BENCH_OVERRIDES (JSON) adds configuration.
 * The analytics target's log lines go to stderr at BENCH_LOG_LEVEL (silent unless set), to see what the
 * server did during a run.
 */
import { mkdtemp } from 'node:fs/promises';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import express from 'express';
import { pino } from 'pino';
import { loadConfig, type ConfigOverrides, type LogLevel } from '../../src/config.js';
import { createLogger } from '../../src/observability/logger.js';
import { projectFile } from '../../src/project-files.js';
import { startServer } from '../../src/server.js';
import { benchObject, addRevisions } from './fixtures.js';
import { benchStore } from './bench-store.js';
import type { OneRecordTarget } from './harness.js';
import { loadAnalyticsData } from './sparql-fixtures.js';

const kind = process.argv[2];
// Exit normally on SIGTERM so --cpu-prof runs can write their profile.
process.on('SIGTERM', () => process.exit(0));
const bodyBytes = Number(process.argv[3] ?? 2000);
const fixedBody = Buffer.from(JSON.stringify({ pad: 'x'.repeat(Math.max(0, bodyBytes - 12)) }));
const ready = (info: Record<string, unknown>) => console.log(JSON.stringify(info));

if (kind === 'bare-http') {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'Content-Type': 'application/ld+json', 'Content-Length': fixedBody.length });
    res.end(fixedBody);
  }).listen(0, '127.0.0.1', () => ready({ url: `http://127.0.0.1:${(server.address() as { port: number }).port}/` }));
} else if (kind === 'bare-express') {
  const app = express();
  app.get('/', (_req, res) => {
    res.setHeader('Content-Type', 'application/ld+json');
    res.send(fixedBody);
  });
  const server = app.listen(0, '127.0.0.1', () =>
    ready({ url: `http://127.0.0.1:${(server.address() as { port: number }).port}/` }),
  );
} else if (kind === 'bare-express-static') {
  // The console's own files as express.static serves them: what serving the console is measured against.
  const app = express();
  app.use(express.static(projectFile('src/http/console')));
  const server = app.listen(0, '127.0.0.1', () =>
    ready({ url: `http://127.0.0.1:${(server.address() as { port: number }).port}` }),
  );
} else if (kind === 'onerecord') {
  const port = Number(process.env.BENCH_PORT ?? 18400);
  const store = await benchStore();
  // The engine of BENCH_STORE=sparql goes with the target.
  process.once('SIGTERM', () => void store.stop().finally(() => process.exit(0)));
  const config = loadConfig(
    {},
    {
      port,
      baseUrl: `http://127.0.0.1:${port}`,
      dataDir: await mkdtemp(join(tmpdir(), 'onerecord-bench-')),
      metrics: process.env.BENCH_METRICS === 'off' ? {} : { token: 'bench-metrics-token-0123456789' },
      store: store.config,
      // Settings a driver weighs (fair-share.ts lifts the per-caller budget), as JSON.
      ...(JSON.parse(process.env.BENCH_OVERRIDES ?? '{}') as ConfigOverrides),
    },
  );
  const level = (process.env.BENCH_LOG_LEVEL ?? 'silent') as LogLevel;
  const server = await startServer(config, createLogger(level, pino.destination({ dest: '/dev/null', sync: true })));
  const { objects, holder, identityProvider } = server.services;
  const token = await identityProvider!.issue(holder);
  const one = await objects.create(await benchObject(), { agent: holder, internal: true });
  const many = await objects.create(await benchObject(), { agent: holder, internal: true });
  await addRevisions(server.store, objects, many.iri, holder, Number(process.env.BENCH_REVISIONS ?? 500) - 1);
  // Tokens of partner organisations for the access-control benchmark (BENCH_PARTNERS of them).
  const partners = await Promise.all(
    Array.from({ length: Number(process.env.BENCH_PARTNERS ?? 0) }, async (_, i) => {
      const agent = `https://partner-${i}.example.com/org`;
      return { agent, token: await identityProvider!.issue(agent) };
    }),
  );
  ready({ url: server.url, token, oneRevision: one.iri, manyRevisions: many.iri, partners } satisfies OneRecordTarget);
} else if (kind === 'analytics') {
  // fsync off: this target measures queries and replica lag, not disk latency.
  const port = Number(process.env.BENCH_PORT ?? 18401);
  // Metrics on: the driver reads the replica's own visibility histogram.
  const metricsToken = 'bench-metrics-token-0123456789';
  const config = loadConfig(
    {},
    {
      port,
      baseUrl: `http://127.0.0.1:${port}`,
      dataDir: await mkdtemp(join(tmpdir(), 'onerecord-bench-')),
      journal: { fsync: false },
      metrics: { token: metricsToken },
    },
  );
  const server = await startServer(
    config,
    createLogger((process.env.BENCH_LOG_LEVEL ?? 'silent') as LogLevel, pino.destination({ dest: 2, sync: false })),
  );
  const { holder, identityProvider } = server.services;
  const data = await loadAnalyticsData(
    server,
    Number(process.env.BENCH_OBJECTS ?? 10_000),
    Number(process.env.BENCH_REVISIONS ?? 5),
  );
  ready({ url: server.url, token: await identityProvider!.issue(holder), metricsToken, ...data });
} else {
  console.error(`unknown target ${kind}`);
  process.exit(2);
}
