/**
 * SPARQL analytics on BENCH_OBJECTS Logistics Objects (default 10,000) x BENCH_REVISIONS revisions
 * (default 5; a Shipment per 4 Pieces, ~1.4 events per object), in one run:
 * 0. how long the query replica takes to hold the data set's last write after the store had it;
 * 1. each shipped query (scripts/queries), p50 of 5 runs;
 * 2. GET of one object under 10 connections, idle vs while 2 clients run the heaviest shipped query
 *    in a loop: p50/p99 and the p99 ratio (target <= 2);
 * 3. replica lag under writes paced at 1,000 changes/s (new objects, at most 64 in flight; more than
 *    this server accepts here, so writes queue), then again at 80% of the rate it accepted then (a
 *    rate it sustains, so the probe does not wait behind queued writes), each measured two ways:
 *    the server's own measure, for every write, of the time from its commit until the replica had
 *    applied it (the histogram onerecord_sparql_replica_visible_seconds, read before and after:
 *    quantiles as the upper bound of their bucket), and from the client, the time from the acknowledged
 *    write to the first SPARQL answer that holds it, sampled every 10th write, p50/p99 (target: < 1 s;
 *    this one includes the probe's wait on the busy request thread, printed apart with the writes'
 *    own latency); the write rate the server accepted, and the lag the answers declared (SPARQL-Replica-Lag);
 *    then the same with Logistics Events (one per request, on the data set's Piece, polled in the
 *    `events` view) offered at 1,000/s: a write this server accepts at that rate here.
 *   npm run build && node dist/scripts/bench/sparql.js [seconds]
 */
import { performance } from 'node:perf_hooks';
import { shippedQueries } from '../../src/domain/analytics/query-files.js';
import { CARGO, CODE_LISTS, XSD } from '../../src/rdf/vocab.js';
import { BENCH_PIECE } from './fixtures.js';
import { LoadClient, fmt, load, machine, percentile, startTarget, warmLoad, type LoadResult } from './harness.js';

const seconds = Number(process.argv[2] ?? 10);
const RUNS = 5;
const WRITES_PER_SECOND = 1000;
const SAMPLE_EVERY = 10;
const MAX_WRITES_IN_FLIGHT = 64;
/** The second lag phase offers this share of the rate the server accepted in the first (saturated) one. */
const SUSTAINED_SHARE = 0.8;
// The target reads the same variables (scripts/bench/targets.ts).
const OBJECTS = Number(process.env.BENCH_OBJECTS ?? 10_000);
const REVISIONS = Number(process.env.BENCH_REVISIONS ?? 5);

interface AnalyticsInfo {
  url: string;
  token: string;
  metricsToken: string;
  piece: string;
  /** The last write of the data set. */
  lastEvent: string;
}

const started = performance.now();
const target = await startTarget<AnalyticsInfo>('analytics');
const setupSeconds = (performance.now() - started) / 1000;
const { url, token, metricsToken, piece, lastEvent } = target.info;
const auth = { Authorization: `Bearer ${token}` };

// The replica applies the data set's writes after the store has: how long until it holds the last one.
const catchUpStarted = performance.now();
for (;;) {
  // The probe waits behind every write still to apply, possibly longer than fetch waits for headers: ask again.
  const res = await fetch(`${url}/sparql?view=events`, {
    method: 'POST',
    headers: { ...auth, 'Content-Type': 'application/sparql-query' },
    body: `ASK { GRAPH <${lastEvent}> { ?s ?p ?o } }`,
  }).catch((err: Error & { cause?: { code?: string } }) => {
    if (err.cause?.code === 'UND_ERR_HEADERS_TIMEOUT') return undefined;
    throw err;
  });
  if (!res) continue;
  if (res.status !== 200) throw new Error(`catch-up probe failed: ${res.status} ${await res.text()}`);
  if (((await res.json()) as { boolean: boolean }).boolean) break;
  await new Promise((resolve) => setTimeout(resolve, 100));
}
const catchUpSeconds = (performance.now() - catchUpStarted) / 1000;

/** The replica's visibility histogram: cumulative count of writes by bucket upper bound (seconds). */
async function visibleHistogram(): Promise<Map<number, number>> {
  const text = await (await fetch(`${url}/metrics`, { headers: { Authorization: `Bearer ${metricsToken}` } })).text();
  const buckets = new Map<number, number>();
  for (const [, le, count] of text.matchAll(/^onerecord_sparql_replica_visible_seconds_bucket\{le="([^"]+)"\} (\d+)/gm))
    buckets.set(le === '+Inf' ? Infinity : Number(le), Number(count));
  return buckets;
}

/** The upper bound (ms) of the bucket that holds quantile `q` of the writes observed between two readings. */
function bucketQuantile(
  before: Map<number, number>,
  after: Map<number, number>,
  q: number,
): { ms: number; writes: number } {
  const bounds = [...after.keys()].sort((a, b) => a - b);
  const between = (le: number) => after.get(le)! - (before.get(le) ?? 0);
  const writes = between(Infinity);
  const bound = bounds.find((le) => between(le) >= q * writes) ?? Infinity;
  return { ms: bound * 1000, writes };
}

async function runQuery(text: string, view: string): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(`${url}/sparql?view=${view}`, {
    method: 'POST',
    headers: { ...auth, 'Content-Type': 'application/sparql-query', Accept: 'application/sparql-results+json' },
    body: text,
  });
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
  const res = await fetch(`${url}/sparql?view=${q.view}`, {
    method: 'POST',
    headers: { ...auth, 'Content-Type': 'application/sparql-query', Accept: 'application/sparql-results+json' },
    body: q.text,
  });
  const rows = ((await res.json()) as { results: { bindings: unknown[] } }).results.bindings.length;
  queryTimes.push({ name: q.name, p50: percentile(times, 0.5), rows });
}
const heaviest = shippedQueries().find((q) => q.name === [...queryTimes].sort((a, b) => b.p50 - a.p50)[0].name)!;

// 2. GET latency, idle and under analytics.
const getLoad = () => load({ url: piece, headers: auth, connections: 10, seconds });
const idle = await warmLoad({ url: piece, headers: auth, connections: 10, seconds });
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

// 3. Replica lag under paced writes. One poller asks for every sampled object not yet seen, in one
// query, as soon as its previous answer is back: a write's lag is counted up to the answer that
// first holds it (an upper bound, never more than one poll late), and the probing load stays one query at a time.
interface LagPhase {
  offered: number;
  acknowledged: number;
  writeSeconds: number;
  lags: number[];
  polls: number;
  /** The lag each poll's answer declared (SPARQL-Replica-Lag), in ms; 0 when it held every write acknowledged before it. */
  declared: number[];
  /** How long each poll took, and each write (ms): what the probe waits for on the request thread. */
  pollTimes: number[];
  writeTimes: number[];
  visible50: { ms: number; writes: number };
  visible99: { ms: number; writes: number };
}

/** What a lag phase writes, where, and the view that shows it (by the IRI the write's Location names). */
interface Writes {
  path: string;
  body: string;
  view: 'latest' | 'events';
}
const OBJECT_WRITES: Writes = { path: `${url}/logistics-objects`, body: JSON.stringify(BENCH_PIECE), view: 'latest' };
const EVENT_WRITES: Writes = {
  path: `${piece}/logistics-events`,
  body: JSON.stringify({
    '@context': { cargo: CARGO },
    '@type': 'cargo:LogisticsEvent',
    'cargo:eventDate': { '@type': `${XSD}dateTime`, '@value': '2024-01-01T10:00:00.000Z' },
    'cargo:eventCode': { '@id': `${CODE_LISTS}StatusCode#DEP` },
    'cargo:eventTimeType': { '@id': `${CARGO}ACTUAL` },
  }),
  view: 'events',
};

async function lagPhase(writesPerSecond: number, writes: Writes): Promise<LagPhase> {
  const writer = new LoadClient({ ...auth, 'Content-Type': 'application/ld+json' });
  const { body } = writes;
  const phase: LagPhase = {
    offered: writesPerSecond,
    acknowledged: 0,
    writeSeconds: 0,
    lags: [],
    polls: 0,
    declared: [],
    pollTimes: [],
    writeTimes: [],
    visible50: { ms: NaN, writes: 0 },
    visible99: { ms: NaN, writes: 0 },
  };
  const unseen = new Map<string, number>();
  let writing = true;
  const poller = (async () => {
    let idleSince = performance.now();
    while (writing || unseen.size > 0) {
      if (unseen.size === 0) {
        await new Promise((resolve) => setTimeout(resolve, 2));
        continue;
      }
      if (!writing && performance.now() - idleSince > 60_000)
        throw new Error(`${unseen.size} acknowledged writes never became visible in SPARQL`);
      const values = [...unseen.keys()].map((iri) => `<${iri}>`).join(' ');
      const askedAt = performance.now();
      const res = await fetch(`${url}/sparql?view=${writes.view}`, {
        method: 'POST',
        headers: { ...auth, 'Content-Type': 'application/sparql-query', Accept: 'application/sparql-results+json' },
        body: `SELECT DISTINCT ?s WHERE { VALUES ?s { ${values} } ?s ?p ?o }`,
      });
      const answeredAt = performance.now();
      phase.pollTimes.push(answeredAt - askedAt);
      phase.polls++;
      if (res.status !== 200) throw new Error(`lag probe failed: ${res.status} ${await res.text()}`);
      phase.declared.push(Number.parseInt(res.headers.get('sparql-replica-lag') ?? 'NaN', 10));
      const seen = ((await res.json()) as { results: { bindings: { s: { value: string } }[] } }).results.bindings;
      for (const { s } of seen) {
        phase.lags.push(answeredAt - unseen.get(s.value)!);
        unseen.delete(s.value);
      }
      if (seen.length > 0) idleSince = answeredAt;
    }
  })();
  const visibleBefore = await visibleHistogram();
  const writeStarted = performance.now();
  const total = Math.round(writesPerSecond * seconds);
  const inFlight: Promise<void>[] = [];
  let pending = 0;
  let settled: () => void = () => {};
  for (let i = 0; i < total; i++) {
    const due = writeStarted + (i * 1000) / writesPerSecond;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
    // Past MAX_WRITES_IN_FLIGHT the writer waits: a server slower than the offered rate then shows as
    // a lower accepted rate, rather than as a queue of requests that the lag probes wait behind.
    while (pending >= MAX_WRITES_IN_FLIGHT) await new Promise<void>((resolve) => (settled = resolve));
    pending++;
    const sample = i % SAMPLE_EVERY === 0;
    const sentAt = performance.now();
    inFlight.push(
      writer.send(writes.path, 'POST', body).then((res) => {
        phase.writeTimes.push(performance.now() - sentAt);
        if (res.status !== 201) throw new Error(`write failed: ${res.status}`);
        phase.acknowledged++;
        pending--;
        settled();
        if (sample) unseen.set(res.headers.location as string, performance.now());
      }),
    );
  }
  await Promise.all(inFlight);
  phase.writeSeconds = (performance.now() - writeStarted) / 1000;
  writing = false;
  await poller;
  const visibleAfter = await visibleHistogram();
  writer.close();
  phase.visible50 = bucketQuantile(visibleBefore, visibleAfter, 0.5);
  phase.visible99 = bucketQuantile(visibleBefore, visibleAfter, 0.99);
  return phase;
}

// Saturated: WRITES_PER_SECOND offered, more than this server accepts here; then paced at a share of
// the rate it accepted, which it sustains, so that the lag is the replica's and not the probe's wait
// behind a queue of writes on the request thread.
const saturated = await lagPhase(WRITES_PER_SECOND, OBJECT_WRITES);
const acceptedRate = saturated.acknowledged / saturated.writeSeconds;
const paced = await lagPhase(Math.max(1, Math.round(SUSTAINED_SHARE * acceptedRate)), OBJECT_WRITES);
const events = await lagPhase(WRITES_PER_SECOND, EVENT_WRITES);
await target.stop();

const row = (name: string, r: LoadResult) =>
  `| ${name} | ${fmt(r.requestsPerSecond)} | ${fmt(r.p50, 1)} | ${fmt(r.p99, 1)} | ${r.non2xx + r.errors} |`;
console.log(
  `machine: ${machine()}; data set loaded in ${fmt(setupSeconds)} s (${fmt(OBJECTS)} objects x ${REVISIONS} revisions, fsync off); the replica held the last write ${fmt(catchUpSeconds, 1)} s after the store had it`,
);
console.log('\n| shipped query | p50 of 5 (ms) | rows |');
console.log('|---|---|---|');
for (const q of queryTimes) console.log(`| ${q.name} | ${fmt(q.p50, 1)} | ${q.rows} |`);
console.log(
  `\nGET one object, 10 connections, ${seconds} s; analytics = 2 clients looping ${heaviest.name} (${analyticsQueries} queries ran)`,
);
console.log('| GET | req/s | p50 ms | p99 ms | errors |');
console.log('|---|---|---|---|---|');
console.log(row('idle', idle));
console.log(row('under analytics', busy));
console.log(row('idle again', idleAgain));
const idleP99 = (idle.p99 + idleAgain.p99) / 2;
console.log(
  `p99 ratio under analytics vs idle (mean of the two idle runs): ${fmt(busy.p99 / idleP99, 2)} (target <= 2)`,
);
function printLag(name: string, phase: LagPhase): void {
  const { acknowledged, writeSeconds, lags, polls, pollTimes, writeTimes, visible50, visible99, declared } = phase;
  console.log(
    `\nreplica lag, ${name}: ${fmt(phase.offered)} writes/s offered, ${acknowledged} writes in ${fmt(writeSeconds, 1)} s (${fmt(acknowledged / writeSeconds)}/s accepted), ${lags.length} sampled, ${polls} polls: ` +
      `p50 ${fmt(percentile(lags, 0.5), 1)} ms, p99 ${fmt(percentile(lags, 0.99), 1)} ms, max ${fmt(Math.max(...lags), 1)} ms (target: visible within 1 s, p99)`,
  );
  console.log(
    `the probe's own time on the server meanwhile: each poll, request to answer, p50 ${fmt(percentile(pollTimes, 0.5), 1)} ms, p99 ${fmt(percentile(pollTimes, 0.99), 1)} ms; ` +
      `each write, request to acknowledgement, p50 ${fmt(percentile(writeTimes, 0.5), 1)} ms, p99 ${fmt(percentile(writeTimes, 0.99), 1)} ms`,
  );
  console.log(
    `replica's own measure, commit to applied by the replica, all ${visible50.writes} writes of that phase (server side, histogram buckets): ` +
      `p50 <= ${fmt(visible50.ms)} ms, p99 <= ${fmt(visible99.ms)} ms (target: 1 s, p99)`,
  );
  const behind = declared.filter((ms) => ms > 0);
  console.log(
    `answers that declared a lag (SPARQL-Replica-Lag > 0): ${behind.length} of ${declared.length} polls${behind.length > 0 ? `, p50 ${fmt(percentile(behind, 0.5))} ms, max ${fmt(Math.max(...behind))} ms` : ''}`,
  );
}
printLag('saturated', saturated);
printLag(`paced at ${fmt(SUSTAINED_SHARE * 100)}% of the rate accepted saturated`, paced);
printLag('Logistics Events, one per request', events);
