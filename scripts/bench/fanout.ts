/**
 * Notification fan-out: one object with 1,000 subscriptions spread over 10 subscriber endpoints.
 * Measures the time from a PATCH until all 1,000 notifications were received, and the publisher's
 * PATCH latency and throughput on that object before it has any subscription and with the 1,000
 * (notifications delivered in the background meanwhile), in the same run. The publisher is a real
 * server in its own process (fsync on); the 10 subscriber endpoints are bare node:http servers in
 * this process answering 204 (they stand for the subscribers' POST /notifications, which is
 * measured elsewhere).
 *   npm run build && node dist/scripts/bench/fanout.js [changes]
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig, type CallbackConfig } from '../../src/config.js';
import { API, CARGO } from '../../src/rdf/vocab.js';
import { startServer } from '../../src/server.js';
import { createLogger } from '../../src/observability/logger.js';
import { addMarkChange } from './fixtures.js';
import { LoadClient, SERVER_NODE_FLAGS, fmt, machine } from './harness.js';

const SUBSCRIBERS = 1000;
const ENDPOINTS = 10;

interface Ready {
  url: string;
  token: string;
}

const organisation = (i: number) => `https://subscriber-${i % ENDPOINTS}.example.com/logistics-objects/org-${i}`;

/** The publisher, in a process of its own: node fanout.js publisher <port> <callbacks JSON file> */
async function publisher(): Promise<void> {
  const port = Number(process.argv[3]);
  const callbacks = JSON.parse(process.argv[4]) as CallbackConfig[];
  const dataDir = await mkdtemp(join(tmpdir(), 'onerecord-fanout-'));
  const config = loadConfig(
    {},
    {
      port,
      baseUrl: `http://127.0.0.1:${port}`,
      dataDir,
      decisionPolicy: 'all',
      internalAgents: callbacks.map((c) => c.organization),
      outbound: { allowPrivateAddresses: true },
      delivery: { callbacks },
    },
  );
  const server = await startServer(config, createLogger('silent'));
  const token = await server.services.identityProvider!.issue(server.services.holder);
  process.send!({ url: server.url, token } satisfies Ready);
  process.on('SIGTERM', () => void server.close().then(() => rm(dataDir, { recursive: true, force: true })).then(() => process.exit(0)));
}

function piece(): string {
  return JSON.stringify({ '@context': { cargo: CARGO }, '@type': 'cargo:Piece', 'cargo:remarks': 'fan-out' });
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

async function driver(): Promise<void> {
  const changes = Number(process.argv[2] ?? 20);
  let received = 0;
  let onReceived: (() => void) | undefined;
  const endpoints: Server[] = [];
  for (let i = 0; i < ENDPOINTS; i++) {
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        received += 1;
        res.writeHead(204).end();
        onReceived?.();
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    endpoints.push(server);
  }
  const callbacks: CallbackConfig[] = Array.from({ length: SUBSCRIBERS }, (_, i) => ({
    organization: organisation(i),
    url: `http://127.0.0.1:${(endpoints[i % ENDPOINTS].address() as { port: number }).port}/notifications`,
  }));
  const port = 18500 + Math.floor(Math.random() * 500);
  const child = fork(fileURLToPath(import.meta.url), ['publisher', String(port), JSON.stringify(callbacks)], { execArgv: SERVER_NODE_FLAGS });
  const [ready] = (await once(child, 'message')) as [Ready];
  const client = new LoadClient({ Authorization: `Bearer ${ready.token}`, 'Content-Type': 'application/ld+json' });
  const create = async () => (await client.send(`${ready.url}/logistics-objects`, 'POST', piece())).headers.location as string;
  const subscribed = await create();
  let revision = 1;
  /** `changes` PATCHes of the subscribed object one after the other: their latencies and the changes per second. */
  const patchInTurn = async () => {
    const latencies: number[] = [];
    const t0 = performance.now();
    for (let i = 0; i < changes; i++) {
      const t = performance.now();
      const res = await client.send(subscribed, 'PATCH', addMarkChange(subscribed, revision++));
      if (res.status !== 201) throw new Error(`PATCH ${res.status}`);
      latencies.push(performance.now() - t);
    }
    return { median: median(latencies), perSecond: (changes * 1000) / (performance.now() - t0) };
  };
  const without = await patchInTurn();

  const started = Date.now();
  for (let i = 0; i < SUBSCRIBERS; i++) {
    const body = JSON.stringify({
      '@context': { api: API },
      '@type': 'api:Subscription',
      'api:hasSubscriber': { '@id': organisation(i) },
      'api:hasTopicType': { '@id': 'api:LOGISTICS_OBJECT_IDENTIFIER' },
      'api:hasTopic': { '@type': 'http://www.w3.org/2001/XMLSchema#anyURI', '@value': subscribed },
      'api:includeSubscriptionEventType': { '@id': 'api:LOGISTICS_OBJECT_UPDATED' },
    });
    const res = await client.send(`${ready.url}/subscriptions`, 'POST', body);
    if (res.status !== 201) throw new Error(`subscription ${i}: ${res.status}`);
  }
  console.log(`# fan-out: ${machine()}; ${SUBSCRIBERS} subscriptions (created in ${fmt((Date.now() - started) / 1000, 1)} s) over ${ENDPOINTS} endpoints`);

  // Fan-out: one change at a time, until all its notifications arrived.
  const fanOut: number[] = [];
  for (let run = 0; run < 3; run++) {
    const target = received + SUBSCRIBERS;
    const done = new Promise<void>((resolve) => {
      onReceived = () => received >= target && resolve();
    });
    const t0 = performance.now();
    const res = await client.send(subscribed, 'PATCH', addMarkChange(subscribed, revision++));
    if (res.status !== 201) throw new Error(`PATCH ${res.status}`);
    await done;
    fanOut.push(performance.now() - t0);
  }
  console.log(`one change -> ${SUBSCRIBERS} notifications delivered: ${fanOut.map((ms) => `${fmt(ms)} ms`).join(', ')} (target < 5000 ms)`);

  // The same PATCHes with 1,000 subscriptions: each answer comes once its 1,000 outbox entries are durable; delivery goes on meanwhile.
  const withSubscriptions = await patchInTurn();
  console.log(
    `PATCH in turn, ${changes} changes: median ${fmt(without.median, 1)} ms, ${fmt(without.perSecond, 1)} changes/s without subscriptions; ` +
      `${fmt(withSubscriptions.median, 1)} ms, ${fmt(withSubscriptions.perSecond, 1)} changes/s with ${SUBSCRIBERS}; ` +
      `latency ratio ${fmt(withSubscriptions.median / without.median, 2)}, throughput ratio ${fmt(without.perSecond / withSubscriptions.perSecond, 2)} (target <= 1.2)`,
  );
  const target = (changes + 3) * SUBSCRIBERS;
  const drained = performance.now();
  while (received < target) await new Promise((r) => setTimeout(r, 50));
  console.log(`all ${fmt(target)} notifications delivered ${fmt(performance.now() - drained)} ms after the last PATCH answer`);
  client.close();
  child.kill('SIGTERM');
  await once(child, 'exit');
  for (const e of endpoints) e.close();
}

if (process.argv[2] === 'publisher') await publisher();
else await driver();
