/**
 * GET one Logistics Object (~40 triples, valid token) under 50 connections, against a bare
 * node:http server and a bare express app answering a fixed body of the same size, in one run.
 * Also: GET latest of an object with 1 vs 500 revisions, and POST throughput (fsync on).
 * Every measurement follows a 2 s warm-up; express and our GET are measured alternately, twice
 * each, and averaged, because a shared 2-core machine drifts between runs.
 *   npm run build && node dist/scripts/bench/get.js [seconds]
 */
import { BENCH_PIECE } from './fixtures.js';
import { fmt, machine, mean, startTarget, warmLoad, WARM_UP_SECONDS, type LoadResult, type OneRecordTarget } from './harness.js';

const seconds = Number(process.argv[2] ?? 10);
const connections = 50;

const measure = (options: Omit<Parameters<typeof warmLoad>[0], 'connections' | 'seconds'>): Promise<LoadResult> => warmLoad({ ...options, connections, seconds });

const row = (name: string, r: LoadResult, base?: LoadResult) =>
  `| ${name} | ${fmt(r.requestsPerSecond)} | ${fmt(r.p50, 1)} | ${fmt(r.p99, 1)} | ${base ? fmt(r.requestsPerSecond / base.requestsPerSecond, 2) : '-'} | ${r.non2xx + r.errors} |`;

const onerecord = await startTarget<OneRecordTarget>('onerecord');
const auth = { Authorization: `Bearer ${onerecord.info.token}` };
const sample = await fetch(onerecord.info.oneRevision, { headers: auth });
const bodyBytes = (await sample.arrayBuffer()).byteLength;

const bareHttp = await startTarget<{ url: string }>('bare-http', [String(bodyBytes)]);
const httpResult = await measure({ url: bareHttp.info.url });
await bareHttp.stop();

const bareExpress = await startTarget<{ url: string }>('bare-express', [String(bodyBytes)]);
const expressRuns: LoadResult[] = [];
const getRuns: LoadResult[] = [];
for (let round = 0; round < 2; round++) {
  expressRuns.push(await measure({ url: bareExpress.info.url }));
  getRuns.push(await measure({ url: onerecord.info.oneRevision, headers: auth }));
}
await bareExpress.stop();
const expressResult = mean(expressRuns);
const getOne = mean(getRuns);

const getMany = await measure({ url: onerecord.info.manyRevisions, headers: auth });
const post = await measure({
  url: `${onerecord.info.url}/logistics-objects`,
  method: 'POST',
  headers: { ...auth, 'Content-Type': 'application/ld+json' },
  body: JSON.stringify(BENCH_PIECE),
});
await onerecord.stop();

console.log(`machine: ${machine()}; ${connections} connections, ${seconds} s each after ${WARM_UP_SECONDS} s warm-up; body ${bodyBytes} bytes`);
console.log('| target | req/s | p50 ms | p99 ms | ratio | errors |');
console.log('|---|---|---|---|---|---|');
console.log(row('bare node:http, fixed body', httpResult));
console.log(row('bare express, fixed body (vs node:http)', expressResult, httpResult));
console.log(row('GET Logistics Object, 1 revision (vs bare express)', getOne, expressResult));
console.log(row('GET Logistics Object, 500 revisions (vs 1 revision)', getMany, getOne));
console.log(row('POST Logistics Object, fsync on (vs GET)', post, getOne));
console.log(`GET vs bare node:http: ${fmt(getOne.requestsPerSecond / httpResult.requestsPerSecond, 2)}; vs bare express: ${fmt(getOne.requestsPerSecond / expressResult.requestsPerSecond, 2)} (target >= 0.8)`);
console.log(`GET latest time, 500 vs 1 revision: ${fmt(getOne.requestsPerSecond / getMany.requestsPerSecond, 2)} (target <= 1.2)`);
