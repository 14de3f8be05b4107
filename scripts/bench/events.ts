/**
 * Logistics Events against a real server (own process, loopback, fsync on):
 * events accepted per second by POST /logistics-objects/{id}/logistics-events (one event per
 * request) and by POST /logistics-events (100 events per request), and list latency for an
 * object with 10 vs 10,000 events (filtered by code, limit 50).
 *   npm run build && node dist/scripts/bench/events.js [seconds]
 */
import { CARGO } from '../../src/rdf/vocab.js';
import { benchEvent as event } from './fixtures.js';
import { fmt, load, machine, processCpuSeconds, startTarget, type LoadResult } from './harness.js';

const seconds = Number(process.argv[2] ?? 5);
const connections = 50;
const listConnections = 10;
const BULK_SIZE = 100;

interface OneRecordInfo {
  url: string;
  token: string;
}

const target = await startTarget<OneRecordInfo>('onerecord', [], { BENCH_REVISIONS: '1' });

const serverCpuSeconds = () => processCpuSeconds(target.process.pid!);

/** A load run, with the server's CPU time per request, which depends less than req/s on what else the machine runs. */
async function measured(opts: Parameters<typeof load>[0]): Promise<LoadResult & { cpuMsPerRequest: number }> {
  const cpuBefore = serverCpuSeconds();
  const result = await load(opts);
  const requests = result.requestsPerSecond * opts.seconds;
  return { ...result, cpuMsPerRequest: ((serverCpuSeconds() - cpuBefore) * 1000) / requests };
}

const { url, token } = target.info;
const auth = { Authorization: `Bearer ${token}` };
const jsonLd = { ...auth, 'Content-Type': 'application/ld+json' };

async function post(path: string, body: unknown): Promise<Response> {
  const res = await fetch(`${url}${path}`, { method: 'POST', headers: jsonLd, body: JSON.stringify(body) });
  if (res.status !== 201 && res.status !== 207) throw new Error(`POST ${path}: ${res.status} ${await res.text()}`);
  return res;
}

const createShipment = async () =>
  (
    await post('/logistics-objects', {
      '@context': { cargo: CARGO },
      '@type': 'cargo:Shipment',
      'cargo:goodsDescription': 'bench',
    })
  ).headers.get('location')!;

const bulkBody = (objects: string[], from: number) => ({
  '@context': { cargo: CARGO },
  '@graph': Array.from({ length: BULK_SIZE }, (_, i) => ({
    ...event(from + i),
    'cargo:eventFor': { '@id': objects[i % objects.length] },
  })),
});

async function fill(object: string, count: number): Promise<void> {
  for (let from = 0; from < count; from += BULK_SIZE) {
    const body = bulkBody([object], from);
    body['@graph'] = body['@graph'].slice(0, count - from);
    await post('/logistics-events', body);
  }
}

/** Mean milliseconds of `count` sequential GETs of the URLs `urlAt(i)` gives. */
async function sequentialMean(count: number, urlAt: (i: number) => string): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < count; i++) {
    const res = await fetch(urlAt(i), { headers: auth });
    if (res.status !== 200) throw new Error(`GET ${urlAt(i)}: ${res.status}`);
    await res.arrayBuffer();
  }
  return (performance.now() - started) / count;
}

const small = await createShipment();
const large = await createShipment();
const sinks = await Promise.all(Array.from({ length: 10 }, createShipment));
await fill(small, 10);
const fillStarted = performance.now();
await fill(large, 10_000);
const fillSeconds = (performance.now() - fillStarted) / 1000;

const single = await measured({
  url: `${sinks[0]}/logistics-events`,
  connections,
  seconds,
  method: 'POST',
  headers: jsonLd,
  body: JSON.stringify({ '@context': { cargo: CARGO }, ...event(0) }),
});
const bulk = await measured({
  url: `${url}/logistics-events`,
  connections: 8,
  seconds,
  method: 'POST',
  headers: jsonLd,
  body: JSON.stringify(bulkBody(sinks, 0)),
});

const page = (object: string, skip = 0) =>
  `${object}/logistics-events?eventType=DEP&limit=50${skip ? `&skip=${skip}` : ''}`;
const pageBytes = async (object: string) =>
  (await (await fetch(page(object), { headers: auth })).arrayBuffer()).byteLength;
// Every page of the large object read once, before anything caches it: the cost of a cold page.
const coldLarge = await sequentialMean(40, (i) => page(large, i * 50));
const warmSmallSequential = await sequentialMean(200, () => page(small));
const listSmall = await measured({ url: page(small), connections: listConnections, seconds, headers: auth });
const listLarge = await measured({ url: page(large), connections: listConnections, seconds, headers: auth });
const [smallBytes, largeBytes] = [await pageBytes(small), await pageBytes(large)];
await target.stop();

type Measured = LoadResult & { cpuMsPerRequest: number };
const row = (name: string, r: Measured, eventsPerRequest: number) =>
  `| ${name} | ${fmt(r.requestsPerSecond)} | ${fmt(r.requestsPerSecond * eventsPerRequest)} | ${r.p50} | ${r.p99} | ${fmt((r.cpuMsPerRequest * 1000) / eventsPerRequest)} | ${r.non2xx + r.errors} |`;
const listRow = (name: string, r: Measured, pageItems: number, bytes: number) =>
  `| ${name} | ${fmt(r.requestsPerSecond)} | ${r.p50} | ${r.p99} | ${fmt(r.cpuMsPerRequest * 1000)} | ${pageItems} | ${bytes} | ${r.non2xx + r.errors} |`;
console.log(`machine: ${machine()}; fsync on; ${seconds} s per run; load generator on the same machine`);
console.log(
  `fill: 10,000 events in ${BULK_SIZE}-event bulk requests, one at a time: ${fmt(10_000 / fillSeconds)} events/s`,
);
console.log('| write | req/s | events/s | p50 ms | p99 ms | server CPU µs/event | errors |');
console.log('|---|---|---|---|---|---|---|');
console.log(row(`POST one event per request (${connections} connections)`, single, 1));
console.log(row(`POST /logistics-events, ${BULK_SIZE} events per request (8 connections)`, bulk, BULK_SIZE));
console.log('');
console.log(
  `| list: eventType=DEP&limit=50 (${listConnections} connections) | req/s | p50 ms | p99 ms | server CPU µs/request | page items | body bytes | errors |`,
);
console.log('|---|---|---|---|---|---|---|---|');
console.log(listRow('object with 10 events', listSmall, 2, smallBytes));
console.log(listRow('object with 10,000 events', listLarge, 50, largeBytes));
console.log(
  `single events/s: ${fmt(single.requestsPerSecond)} (target >= 2,000); at the server's CPU cost, one core takes ${fmt(1000 / single.cpuMsPerRequest)} events/s`,
);
console.log(
  `list time ratio 10,000 vs 10 events: ${fmt(listSmall.requestsPerSecond / listLarge.requestsPerSecond, 2)} by req/s, ` +
    `${fmt(listLarge.cpuMsPerRequest / listSmall.cpuMsPerRequest, 2)} by server CPU (target <= 3)`,
);
console.log(
  `sequential, one client: 10 events ${fmt(warmSmallSequential, 2)} ms; 10,000 events, 40 pages never read before ${fmt(coldLarge, 2)} ms ` +
    `(ratio ${fmt(coldLarge / warmSmallSequential, 2)}; about ${fmt(((coldLarge - warmSmallSequential) * 1000) / 48)} µs per event rendered the first time)`,
);
