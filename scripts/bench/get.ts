/**
 * GET one Logistics Object (~40 triples, valid token) under 50 connections, against a bare
 * node:http server and a bare express app answering a fixed body of the same size, in one run.
 * Also: GET latest of an object with 1 vs 500 revisions, GET of an object under 20 subscriptions and
 * 10 grants vs one without (alternated twice, in the same server), a conditional GET answered 304
 * vs a plain GET of the same object, with the server's CPU per request (alternated twice), and POST
 * throughput (fsync on).
 * Every measurement follows a 2 s warm-up; express and our GET are measured alternately, twice
 * each, and averaged, because a shared 2-core machine drifts between runs.
 *   npm run build && node dist/scripts/bench/get.js [seconds]
 * all.ts runs it through measureGet.
 */
import { fileURLToPath } from 'node:url';
import { BENCH_PIECE } from './fixtures.js';
import {
  fmt,
  load,
  machine,
  mean,
  processCpuSeconds,
  startTarget,
  warmLoad,
  WARM_UP_SECONDS,
  type LoadResult,
  type OneRecordTarget,
} from './harness.js';

const connections = 50;

/** GET goals of issue 33: GET at least this share of bare express; GET latest of 500 revisions at most this multiple of 1 revision's time. */
export const GET_GOAL = 0.9;
export const REVISIONS_GOAL = 1.2;
/** The object read under subscriptions and grants: as many of each as issue 33 names. */
const SUBSCRIPTIONS = 20;
const GRANTS = 10;

export interface GetResults {
  seconds: number;
  bodyBytes: number;
  bareHttp: LoadResult;
  bareExpress: LoadResult;
  getOne: LoadResult;
  getMany: LoadResult;
  /** GET of a fresh object without subscriptions or grants, alternated with `getShared`. */
  getPlain: LoadResult;
  /** GET of an object under SUBSCRIPTIONS subscriptions and GRANTS grants (by its creator). */
  getShared: LoadResult;
  /** GET of the 1-revision object, alternated with `getNotModified`, and the server's CPU per request. */
  getWhole: CpuMeasured;
  /** The same GET with If-None-Match naming its ETag: every answer a 304. */
  getNotModified: CpuMeasured;
  post: LoadResult;
}

/** A run and the server process's CPU per request during it (user + system, every thread; 10 ms ticks). */
interface CpuMeasured {
  result: LoadResult;
  cpuMicrosPerRequest: number;
}

/** The agent a token of the embedded identity provider speaks for. */
const agentOfToken = (token: string): string =>
  (JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString('utf8')) as { logistics_agent_uri: string })
    .logistics_agent_uri;

/** Creates a Logistics Object with `subscriptions` subscriptions of its creator and a grant to each of `grantees`; returns its URL. */
async function sharedObject(url: string, token: string, subscriptions: number, grantees: string[]): Promise<string> {
  const headers = { Authorization: `Bearer ${token}`, 'Content-Type': 'application/ld+json' };
  const send = async (path: string, body: unknown): Promise<string> => {
    const res = await fetch(`${url}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
    if (res.status !== 201) throw new Error(`POST ${path}: ${res.status} ${await res.text()}`);
    return res.headers.get('location')!;
  };
  const object = await send('/logistics-objects', BENCH_PIECE);
  const api = 'https://onerecord.iata.org/ns/api#';
  const events = ['LOGISTICS_OBJECT_UPDATED', 'LOGISTICS_EVENT_RECEIVED'];
  for (let i = 0; i < subscriptions; i++) {
    await send('/subscriptions', {
      '@context': { api },
      '@type': 'api:Subscription',
      'api:hasSubscriber': { '@id': agentOfToken(token) },
      'api:hasTopicType': { '@id': 'api:LOGISTICS_OBJECT_IDENTIFIER' },
      'api:hasTopic': { '@type': 'http://www.w3.org/2001/XMLSchema#anyURI', '@value': object },
      'api:includeSubscriptionEventType': { '@id': `api:${events[i % events.length]}` },
    });
  }
  for (const agent of grantees) {
    await send('/access-delegations', {
      '@context': { api },
      '@type': 'api:AccessDelegation',
      'api:hasPermission': { '@id': 'api:GET_LOGISTICS_OBJECT' },
      'api:isRequestedFor': { '@id': agent },
      'api:hasLogisticsObject': [{ '@id': object }],
    });
  }
  return object;
}

/** `load` after the warm-up, with the CPU process `pid` spends per request meanwhile. */
async function measureCpu(pid: number, options: Parameters<typeof load>[0]): Promise<CpuMeasured> {
  await load({ ...options, seconds: WARM_UP_SECONDS });
  const before = processCpuSeconds(pid);
  const result = await load(options);
  const requests = result.requestsPerSecond * options.seconds;
  return { result, cpuMicrosPerRequest: ((processCpuSeconds(pid) - before) * 1e6) / requests };
}

const meanCpu = (runs: CpuMeasured[]): CpuMeasured => ({
  result: mean(runs.map((r) => r.result)),
  cpuMicrosPerRequest: runs.reduce((sum, r) => sum + r.cpuMicrosPerRequest, 0) / runs.length,
});

/** The 1-revision object's GET against its conditional GET, alternated twice; throws unless that is a 304. */
async function measureNotModified(
  target: OneRecordTarget,
  pid: number,
  seconds: number,
): Promise<Pick<GetResults, 'getWhole' | 'getNotModified'>> {
  const auth = { Authorization: `Bearer ${target.token}` };
  const etag = (await fetch(target.oneRevision, { method: 'HEAD', headers: auth })).headers.get('etag');
  const conditional = { ...auth, 'If-None-Match': etag ?? '' };
  const check = async () => {
    const status = (await fetch(target.oneRevision, { headers: conditional })).status;
    if (status !== 304) throw new Error(`conditional GET: ${status}, not 304`);
  };
  await check();
  const whole: CpuMeasured[] = [];
  const notModified: CpuMeasured[] = [];
  for (let round = 0; round < 2; round++) {
    whole.push(await measureCpu(pid, { url: target.oneRevision, headers: auth, connections, seconds }));
    notModified.push(await measureCpu(pid, { url: target.oneRevision, headers: conditional, connections, seconds }));
  }
  // The object did not change meanwhile: every conditional answer was a 304 (autocannon counts them as non-2xx).
  await check();
  return { getWhole: meanCpu(whole), getNotModified: meanCpu(notModified) };
}

/** Every measurement of this benchmark, `seconds` each (after the warm-up). */
export async function measureGet(seconds: number): Promise<GetResults> {
  const measure = (options: Omit<Parameters<typeof warmLoad>[0], 'connections' | 'seconds'>): Promise<LoadResult> =>
    warmLoad({ ...options, connections, seconds });
  const onerecord = await startTarget<OneRecordTarget>('onerecord', [], { BENCH_PARTNERS: String(GRANTS) });
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

  const getMany = await measure({ url: onerecord.info.manyRevisions, headers: auth });
  const { url, token, partners } = onerecord.info;
  const plainObject = await sharedObject(url, token, 0, []);
  const shared = await sharedObject(
    url,
    token,
    SUBSCRIPTIONS,
    partners.map((p) => p.agent),
  );
  const plainRuns: LoadResult[] = [];
  const sharedRuns: LoadResult[] = [];
  for (let round = 0; round < 2; round++) {
    plainRuns.push(await measure({ url: plainObject, headers: auth }));
    sharedRuns.push(await measure({ url: shared, headers: auth }));
  }
  const conditional = await measureNotModified(onerecord.info, onerecord.process.pid!, seconds);
  const post = await measure({
    url: `${onerecord.info.url}/logistics-objects`,
    method: 'POST',
    headers: { ...auth, 'Content-Type': 'application/ld+json' },
    body: JSON.stringify(BENCH_PIECE),
  });
  await onerecord.stop();
  return {
    seconds,
    bodyBytes,
    bareHttp: httpResult,
    bareExpress: mean(expressRuns),
    getOne: mean(getRuns),
    getMany,
    getPlain: mean(plainRuns),
    getShared: mean(sharedRuns),
    ...conditional,
    post,
  };
}

function printGet(r: GetResults): void {
  const row = (name: string, x: LoadResult, base?: LoadResult) =>
    `| ${name} | ${fmt(x.requestsPerSecond)} | ${fmt(x.p50, 1)} | ${fmt(x.p99, 1)} | ${base ? fmt(x.requestsPerSecond / base.requestsPerSecond, 2) : '-'} | ${x.non2xx + x.errors} |`;
  console.log(
    `machine: ${machine()}; ${connections} connections, ${r.seconds} s each after ${WARM_UP_SECONDS} s warm-up; body ${r.bodyBytes} bytes`,
  );
  console.log('| target | req/s | p50 ms | p99 ms | ratio | errors |');
  console.log('|---|---|---|---|---|---|');
  console.log(row('bare node:http, fixed body', r.bareHttp));
  console.log(row('bare express, fixed body (vs node:http)', r.bareExpress, r.bareHttp));
  console.log(row('GET Logistics Object, 1 revision (vs bare express)', r.getOne, r.bareExpress));
  console.log(row('GET Logistics Object, 500 revisions (vs 1 revision)', r.getMany, r.getOne));
  console.log(row('GET Logistics Object, no subscriptions or grants', r.getPlain));
  console.log(
    row(`GET Logistics Object, ${SUBSCRIPTIONS} subscriptions and ${GRANTS} grants (vs none)`, r.getShared, r.getPlain),
  );
  console.log(row('GET Logistics Object, alternated with the conditional GET', r.getWhole.result));
  // Its 304s are what autocannon counts as non-2xx: only transport errors are errors here.
  const notModified = { ...r.getNotModified.result, non2xx: 0 };
  console.log(row('GET Logistics Object, If-None-Match answered 304 (vs GET)', notModified, r.getWhole.result));
  console.log(row('POST Logistics Object, fsync on (vs GET)', r.post, r.getOne));
  console.log(
    `GET vs bare node:http: ${fmt(r.getOne.requestsPerSecond / r.bareHttp.requestsPerSecond, 2)}; vs bare express: ${fmt(r.getOne.requestsPerSecond / r.bareExpress.requestsPerSecond, 2)} (target >= ${GET_GOAL})`,
  );
  console.log(
    `GET under ${SUBSCRIPTIONS} subscriptions and ${GRANTS} grants vs none: ${fmt(r.getShared.requestsPerSecond / r.getPlain.requestsPerSecond, 2)} (target: the same, within the noise)`,
  );
  const cpu = (m: CpuMeasured) => `${fmt(m.cpuMicrosPerRequest)} µs`;
  console.log(
    `Conditional GET answered 304 vs GET, server CPU per request: ` +
      `${fmt(r.getNotModified.cpuMicrosPerRequest / r.getWhole.cpuMicrosPerRequest, 2)} ` +
      `(${cpu(r.getNotModified)} vs ${cpu(r.getWhole)}; target < 1)`,
  );
  console.log(
    `GET latest time, 500 vs 1 revision: ${fmt(r.getOne.requestsPerSecond / r.getMany.requestsPerSecond, 2)} (target <= ${REVISIONS_GOAL})`,
  );
}

if (process.argv[1] === fileURLToPath(import.meta.url)) printGet(await measureGet(Number(process.argv[2] ?? 10)));
