/**
 * Access control on the hot path and revocation of a trust chain, in one run:
 * 1. GET of one Logistics Object by a delegate (a grant from an accepted AccessDelegationRequest,
 *    checked on every request) vs by the holder, 50 connections, alternated twice each after a
 *    warm-up and averaged; ratio delegate / holder (target >= 0.95).
 * 2. A delegation chain of depth 10 (holder -> partner 0 -> ... -> partner 9, each onward
 *    delegation accepted by the holder) covering 1,000 objects; the holder revokes the first one.
 *    Reported: the DELETE's time (the commit that withdraws all 10,000 object grants, fsync on;
 *    target < 1 s), and the GET latency of unrelated callers (4 loops reading another object)
 *    before and while it runs.
 *   npm run build && node dist/scripts/bench/access.js [seconds]
 */
import {
  fmt,
  LoadClient,
  machine,
  percentile,
  startTarget,
  warmLoad,
  WARM_UP_SECONDS,
  type LoadResult,
  type OneRecordTarget,
} from './harness.js';
import { BENCH_PIECE } from './fixtures.js';

const seconds = Number(process.argv[2] ?? 10);
const connections = 50;
const DEPTH = 10;
const CHAIN_OBJECTS = 1000;

const target = await startTarget<OneRecordTarget>('onerecord', [], { BENCH_PARTNERS: String(DEPTH + 2) });
const { url, oneRevision } = target.info;
const [delegate, unrelated, ...chain] = target.info.partners;
const bearer = (token: string) => ({ Authorization: `Bearer ${token}`, 'Content-Type': 'application/ld+json' });
const holder = bearer(target.info.token);
const client = new LoadClient({});

async function send(
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<{ status: number; location?: string }> {
  const res = await client.send(
    path.startsWith('http') ? path : `${url}${path}`,
    method,
    body === undefined ? undefined : JSON.stringify(body),
    headers,
  );
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status}`);
  return { status: res.status, location: res.headers.location as string | undefined };
}

const delegation = (agent: string, objects: string[]) => ({
  '@context': { api: 'https://onerecord.iata.org/ns/api#' },
  '@type': 'api:AccessDelegation',
  'api:hasPermission': { '@id': 'api:GET_LOGISTICS_OBJECT' },
  'api:isRequestedFor': { '@id': agent },
  'api:hasLogisticsObject': objects.map((o) => ({ '@id': o })),
});

// 1. Hot path: delegate vs holder on the same object.
await send('POST', '/access-delegations', holder, delegation(delegate.agent, [oneRevision]));
const measure = (token: string): Promise<LoadResult> =>
  warmLoad({ url: oneRevision, headers: { Authorization: `Bearer ${token}` }, connections, seconds });
const holderRuns: LoadResult[] = [];
const delegateRuns: LoadResult[] = [];
for (let round = 0; round < 2; round++) {
  holderRuns.push(await measure(target.info.token));
  delegateRuns.push(await measure(delegate.token));
}
const mean = (runs: LoadResult[], pick: (r: LoadResult) => number) =>
  runs.reduce((sum, r) => sum + pick(r), 0) / runs.length;

// 2. A chain of depth 10 over 1,000 objects, then its revocation under read load.
const objects: string[] = [];
for (let i = 0; i < CHAIN_OBJECTS; i++)
  objects.push((await send('POST', '/logistics-objects', holder, BENCH_PIECE)).location!);
const first = (await send('POST', '/access-delegations', holder, delegation(chain[0].agent, objects))).location!;
for (let level = 1; level < DEPTH; level++) {
  const request = (
    await send('POST', '/access-delegations', bearer(chain[level - 1].token), delegation(chain[level].agent, objects))
  ).location!;
  await send('PATCH', `${request}?status=REQUEST_ACCEPTED`, holder);
}
const deepest = bearer(chain[DEPTH - 1].token);
if ((await client.send(objects[500], 'GET', undefined, deepest)).status !== 200)
  throw new Error('the end of the chain cannot read');
await send('POST', '/access-delegations', holder, delegation(unrelated.agent, [oneRevision]));

const latencies: { at: number; ms: number }[] = [];
let reading = true;
const reader = async () => {
  const headers = { Authorization: `Bearer ${unrelated.token}` };
  while (reading) {
    const start = performance.now();
    const res = await client.send(oneRevision, 'GET', undefined, headers);
    if (res.status !== 200) throw new Error(`unrelated GET: ${res.status}`);
    latencies.push({ at: start, ms: performance.now() - start });
  }
};
const readers = Array.from({ length: 4 }, reader);
await new Promise((resolve) => setTimeout(resolve, 1500));
const revokeStart = performance.now();
await send('DELETE', first, holder);
const revokeEnd = performance.now();
await new Promise((resolve) => setTimeout(resolve, 500));
reading = false;
await Promise.all(readers);
const withdrawn = (await client.send(objects[500], 'GET', undefined, deepest)).status;
client.close();
await target.stop();

const before = latencies.filter((l) => l.at + l.ms < revokeStart && l.at > revokeStart - 1000).map((l) => l.ms);
const during = latencies.filter((l) => l.at < revokeEnd && l.at + l.ms > revokeStart).map((l) => l.ms);

const holderRps = mean(holderRuns, (r) => r.requestsPerSecond);
const delegateRps = mean(delegateRuns, (r) => r.requestsPerSecond);
console.log(
  `machine: ${machine()}; ${connections} connections, ${seconds} s each after ${WARM_UP_SECONDS} s warm-up, alternated twice`,
);
console.log('| GET one Logistics Object | req/s | p50 ms | p99 ms | errors |');
console.log('|---|---|---|---|---|');
for (const [name, runs] of [
  ['by the holder (internal actor)', holderRuns],
  ['by a delegate (grant checked)', delegateRuns],
] as const) {
  console.log(
    `| ${name} | ${fmt(mean(runs, (r) => r.requestsPerSecond))} | ${fmt(
      mean(runs, (r) => r.p50),
      1,
    )} | ${fmt(
      mean(runs, (r) => r.p99),
      1,
    )} | ${mean(runs, (r) => r.non2xx + r.errors)} |`,
  );
}
console.log(`delegate vs holder: ${fmt(delegateRps / holderRps, 2)} (target >= 0.95)`);
console.log(
  `revocation of a depth-${DEPTH} chain over ${fmt(CHAIN_OBJECTS)} objects (${fmt(DEPTH * CHAIN_OBJECTS)} object grants): DELETE answered in ${fmt(revokeEnd - revokeStart, 1)} ms (target < 1000); end of the chain then gets ${withdrawn}`,
);
console.log(
  `unrelated GETs (4 loops): before p50 ${fmt(percentile(before, 0.5), 2)} ms, max ${fmt(Math.max(...before), 2)} ms (${before.length} requests in the last second); during the revocation ${during.length} requests, max ${fmt(Math.max(...during), 2)} ms`,
);
