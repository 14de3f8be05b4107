/**
 * GET one Logistics Object (~40 triples, valid token) under 50 connections, against a bare
 * node:http server and a bare express app answering a fixed body of the same size, in one run.
 * Also: GET latest of an object with 1 vs 500 revisions, and POST throughput (fsync on).
 *   npm run build && node dist/scripts/bench/get.js [seconds]
 */
import { BENCH_PIECE } from './fixtures.js';
import { fmt, load, machine, startTarget, type LoadResult } from './harness.js';

const seconds = Number(process.argv[2] ?? 10);
const connections = 50;

interface OneRecordInfo {
  url: string;
  token: string;
  oneRevision: string;
  manyRevisions: string;
}

const row = (name: string, r: LoadResult, base?: LoadResult) =>
  `| ${name} | ${fmt(r.requestsPerSecond)} | ${r.p50} | ${r.p99} | ${base ? fmt(r.requestsPerSecond / base.requestsPerSecond, 2) : '-'} | ${r.non2xx + r.errors} |`;

const onerecord = await startTarget<OneRecordInfo>('onerecord');
const auth = { Authorization: `Bearer ${onerecord.info.token}` };
const sample = await fetch(onerecord.info.oneRevision, { headers: auth });
const bodyBytes = (await sample.arrayBuffer()).byteLength;

const bareHttp = await startTarget<{ url: string }>('bare-http', [String(bodyBytes)]);
const httpResult = await load({ url: bareHttp.info.url, connections, seconds });
await bareHttp.stop();
const bareExpress = await startTarget<{ url: string }>('bare-express', [String(bodyBytes)]);
const expressResult = await load({ url: bareExpress.info.url, connections, seconds });
await bareExpress.stop();

const getOne = await load({ url: onerecord.info.oneRevision, connections, seconds, headers: auth });
const getMany = await load({ url: onerecord.info.manyRevisions, connections, seconds, headers: auth });
const postBody = JSON.stringify(BENCH_PIECE);
const post = await load({
  url: `${onerecord.info.url}/logistics-objects`,
  connections,
  seconds,
  method: 'POST',
  headers: { ...auth, 'Content-Type': 'application/ld+json' },
  body: postBody,
});
await onerecord.stop();

console.log(`machine: ${machine()}; ${connections} connections, ${seconds} s each; body ${bodyBytes} bytes`);
console.log('| target | req/s | p50 ms | p99 ms | ratio | errors |');
console.log('|---|---|---|---|---|---|');
console.log(row('bare node:http, fixed body', httpResult));
console.log(row('bare express, fixed body', expressResult, httpResult));
console.log(row('GET Logistics Object (1 revision) vs bare express', getOne, expressResult));
console.log(row('GET Logistics Object (500 revisions) vs 1 revision', getMany, getOne));
console.log(row('POST Logistics Object (fsync on) vs GET', post, getOne));
console.log(`GET vs bare node:http: ${fmt(getOne.requestsPerSecond / httpResult.requestsPerSecond, 2)}`);
console.log(`GET latest time ratio 500 vs 1 revision: ${fmt(getOne.requestsPerSecond / getMany.requestsPerSecond, 2)} (target <= 1.2)`);
