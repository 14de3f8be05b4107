/**
 * SPARQL analytics on 10,000 Logistics Objects x 5 revisions (2,000 Shipments of 4 Pieces, ~14,000
 * events), in one run:
 * 1. each shipped query (scripts/queries), p50 of 5 runs;
 * 2. GET of one object under 10 connections, idle vs while 2 clients run the heaviest shipped query
 *    in a loop: p50/p99 and the p99 ratio (target <= 2);
 * 3. replica lag under writes paced at 1,000 changes/s (new objects): time from the acknowledged
 *    write to its first visibility in SPARQL, sampled every 10th write, p50/p99 (target: < 1 s).
 *   npm run build && node dist/scripts/bench/sparql.js [seconds]
 */
import { performance } from 'node:perf_hooks';
import { shippedQueries } from '../../src/domain/query-files.js';
import { BENCH_PIECE } from './fixtures.js';
import { LoadClient, fmt, load, machine, startTarget, type LoadResult } from './harness.js';

const seconds = Number(process.argv[2] ?? 10);
const RUNS = 5;
const WRITES_PER_SECOND = 1000;
const SAMPLE_EVERY = 10;

interface AnalyticsInfo {
  url: string;
  token: string;
  piece: string;
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
};

const started = performance.now();
const target = await startTarget<AnalyticsInfo>('analytics');
const setupSeconds = (performance.now() - started) / 1000;
const { url, token, piece } = target.info;
const auth = { Authorization: `Bearer ${token}` };

async function runQuery(text: string, view: string): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(`${url}/sparql?view=${view}`, { method: 'POST', headers: { ...auth, 'Content-Type': 'application/sparql-query', Accept: 'application/sparql-results+json' }, body: text });
  const body = await res.text();
  if (res.status !== 200) throw new Error(`query failed: ${res.status} ${body}`);
  return performance.now() - t0;
}

// 1. Shipped queries.
const queryTimes: { name: string; p50: number; rows: number }[] = [];
for (const q of shippedQueries()) {
  await runQuery(q.text, q.view); // warm-up
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) times.push(await runQuery(q.text, q.view));
  const res = await fetch(`${url}/sparql?view=${q.view}`, { method: 'POST', headers: { ...auth, 'Content-Type': 'application/sparql-query', Accept: 'application/sparql-results+json' }, body: q.text });
  const rows = ((await res.json()) as { results: { bindings: unknown[] } }).results.bindings.length;
  queryTimes.push({ name: q.name, p50: percentile(times, 50), rows });
}
const heaviest = shippedQueries().find((q) => q.name === [...queryTimes].sort((a, b) => b.p50 - a.p50)[0].name)!;

// 2. GET latency, idle and under analytics.
const getLoad = () => load({ url: piece, headers: auth, connections: 10, seconds });
await load({ url: piece, headers: auth, connections: 10, seconds: 2 });
const idle = await getLoad();
let analyticsRunning = true;
let analyticsQueries = 0;
const analyticsClient = async () => {
  while (analyticsRunning) {
    await runQuery(heaviest.text, heaviest.view);
    analyticsQueries++;
  }
};
const clients = [analyticsClient(), analyticsClient()];
const busy = await getLoad();
analyticsRunning = false;
await Promise.all(clients);
const idleAgain = await getLoad();

// 3. Replica lag under paced writes.
const writer = new LoadClient({ ...auth, 'Content-Type': 'application/ld+json' });
const body = JSON.stringify(BENCH_PIECE);
const lags: number[] = [];
const probes: Promise<void>[] = [];
let acknowledged = 0;
const writeStarted = performance.now();
const total = WRITES_PER_SECOND * seconds;
const inFlight: Promise<void>[] = [];
for (let i = 0; i < total; i++) {
  const due = writeStarted + (i * 1000) / WRITES_PER_SECOND;
  const wait = due - performance.now();
  if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
  const sample = i % SAMPLE_EVERY === 0;
  inFlight.push(
    writer.send(`${url}/logistics-objects`, 'POST', body).then((res) => {
      if (res.status !== 201) throw new Error(`write failed: ${res.status}`);
      acknowledged++;
      if (!sample) return;
      const ackAt = performance.now();
      const location = res.headers.location as string;
      probes.push(
        (async () => {
          for (;;) {
            const r = await fetch(`${url}/sparql`, { method: 'POST', headers: { ...auth, 'Content-Type': 'application/sparql-query' }, body: `ASK { <${location}> ?p ?o }` });
            if (((await r.json()) as { boolean: boolean }).boolean) break;
          }
          lags.push(performance.now() - ackAt);
        })(),
      );
    }),
  );
}
await Promise.all(inFlight);
const writeSeconds = (performance.now() - writeStarted) / 1000;
await Promise.all(probes);
writer.close();
await target.stop();

const row = (name: string, r: LoadResult) => `| ${name} | ${fmt(r.requestsPerSecond)} | ${fmt(r.p50, 1)} | ${fmt(r.p99, 1)} | ${r.non2xx + r.errors} |`;
console.log(`machine: ${machine()}; data set loaded in ${fmt(setupSeconds)} s (10,000 objects x 5 revisions, fsync off)`);
console.log('\n| shipped query | p50 of 5 (ms) | rows |');
console.log('|---|---|---|');
for (const q of queryTimes) console.log(`| ${q.name} | ${fmt(q.p50, 1)} | ${q.rows} |`);
console.log(`\nGET one object, 10 connections, ${seconds} s; analytics = 2 clients looping ${heaviest.name} (${analyticsQueries} queries ran)`);
console.log('| GET | req/s | p50 ms | p99 ms | errors |');
console.log('|---|---|---|---|---|');
console.log(row('idle', idle));
console.log(row('under analytics', busy));
console.log(row('idle again', idleAgain));
const idleP99 = (idle.p99 + idleAgain.p99) / 2;
console.log(`p99 ratio under analytics vs idle (mean of the two idle runs): ${fmt(busy.p99 / idleP99, 2)} (target <= 2)`);
console.log(`\nreplica lag: ${acknowledged} writes in ${fmt(writeSeconds, 1)} s (${fmt(acknowledged / writeSeconds)}/s), ${lags.length} sampled: p50 ${fmt(percentile(lags, 50), 1)} ms, p99 ${fmt(percentile(lags, 99), 1)} ms, max ${fmt(Math.max(...lags), 1)} ms (target: visible within 1 s)`);
