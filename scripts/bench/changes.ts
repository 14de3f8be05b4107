/**
 * Accepted changes per second: PATCH with the auto policy (the holder's changes are accepted at
 * once), each Change 2 DELETEs + 3 ADDs on a ~40-triple Piece, sequentially and with 20 clients on
 * distinct objects; p50/p99; ratio to the POST-object rate of the same run; the time of a change
 * on an object with 10 vs 1,000 revisions; memory per revision. The server runs in its own
 * process (startServer, loopback, fsync on) so the clients do not share its event loop.
 *   npm run build && node dist/scripts/bench/changes.js [seconds]
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../../src/config.js';
import { startServer } from '../../src/server.js';
import { BENCH_PIECE } from './fixtures.js';
import { LoadClient, SERVER_NODE_FLAGS, fmt, machine, type SentRequest } from './harness.js';

const CARGO = 'https://onerecord.iata.org/ns/cargo#';
const XSD_STRING = 'http://www.w3.org/2001/XMLSchema#string';
const CLIENTS = 20;
/** Each client cycles over its own objects, so no object grows much during a run (every change adds one triple). */
const OBJECTS_PER_CLIENT = 25;

interface Ready {
  url: string;
  token: string;
}
interface Memory {
  /** Server CPU time so far (user + system), µs. */
  cpu: number;
  heapUsed: number;
  external: number;
  rss: number;
  quads: number;
}

async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as { port: number }).port;
  server.close();
  return port;
}

/** The server side: a real server; answers 'memory' messages after a full GC. */
async function serve(): Promise<void> {
  const port = await freePort();
  const dataDir = await mkdtemp(join(tmpdir(), 'onerecord-bench-changes-'));
  // No snapshot during the runs: one started by the POST run would slow down the PATCH runs after it.
  const journal = { fsync: true, snapshotAfterBytes: 4 * 1024 ** 3 };
  const config = loadConfig({}, { port, host: '127.0.0.1', baseUrl: `http://127.0.0.1:${port}`, dataDir, decisionPolicy: 'auto', journal });
  const server = await startServer(config, () => {});
  const token = await server.services.identityProvider!.issue(server.services.holder);
  process.on('message', (message) => {
    if (message === 'memory') {
      (globalThis as { gc?: () => void }).gc?.();
      const m = process.memoryUsage();
      const cpu = process.cpuUsage();
      process.send!({ cpu: cpu.user + cpu.system, heapUsed: m.heapUsed, external: m.external, rss: m.rss, quads: server.store.index.size } satisfies Memory);
    } else if (message === 'stop') {
      void server.close().then(() => rm(dataDir, { recursive: true, force: true })).then(() => process.exit(0));
    }
  });
  process.send!({ url: server.url, token } satisfies Ready);
}

/** A Piece being changed: the values its next Change deletes. */
interface Subject {
  iri: string;
  revision: number;
  goods: string;
  upid: string;
  step: number;
}

const operation = (op: 'ADD' | 'DELETE', s: string, p: string, value: string) => ({
  '@type': 'api:Operation',
  'api:op': { '@id': `api:${op}` },
  'api:s': s,
  'api:p': `${CARGO}${p}`,
  'api:o': { '@type': 'api:OperationObject', 'api:hasDatatype': XSD_STRING, 'api:hasValue': value },
});

/** Replaces goodsDescription and upid; `grow` adds a shipping mark as the third ADD. */
function nextChange(subject: Subject, grow: boolean): string {
  const goods = `goods ${subject.step + 1}`;
  const upid = `UPID-${subject.step + 1}`;
  const operations = [
    operation('DELETE', subject.iri, 'goodsDescription', subject.goods),
    operation('DELETE', subject.iri, 'upid', subject.upid),
    operation('ADD', subject.iri, 'goodsDescription', goods),
    operation('ADD', subject.iri, 'upid', upid),
  ];
  if (grow) operations.push(operation('ADD', subject.iri, 'shippingMarks', `mark ${subject.step + 1}`));
  subject.goods = goods;
  subject.upid = upid;
  subject.step += 1;
  return JSON.stringify({
    '@context': { api: 'https://onerecord.iata.org/ns/api#', 'api:p': { '@type': 'http://www.w3.org/2001/XMLSchema#anyURI' } },
    '@type': 'api:Change',
    'api:hasLogisticsObject': { '@id': subject.iri },
    'api:hasOperation': operations,
    'api:hasRevision': subject.revision,
  });
}

interface RunResult {
  perSecond: number;
  p50: number;
  p99: number;
  failures: number;
  count: number;
}

function summarise(latencies: number[], seconds: number, failures: number): RunResult {
  const sorted = [...latencies].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
  return { perSecond: latencies.length / seconds, p50: at(0.5), p99: at(0.99), failures, count: latencies.length };
}

/** `clients` loops issuing requests back to back for `seconds`; a request fails unless it answers `expected`. */
async function run(clients: number, seconds: number, request: (client: number) => Promise<SentRequest>, expected: number): Promise<RunResult> {
  const latencies: number[] = [];
  let failures = 0;
  const started = performance.now();
  const deadline = started + seconds * 1000;
  await Promise.all(
    Array.from({ length: clients }, async (_, client) => {
      while (performance.now() < deadline) {
        const t = performance.now();
        const res = await request(client);
        if (res.status === expected) latencies.push(performance.now() - t);
        else failures += 1;
      }
    }),
  );
  return summarise(latencies, (performance.now() - started) / 1000, failures);
}

async function drive(seconds: number): Promise<void> {
  const child = fork(fileURLToPath(import.meta.url), ['serve'], { execArgv: [...SERVER_NODE_FLAGS, '--expose-gc', ...(process.env.BENCH_PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE_DIR}`] : [])] });
  const [ready] = (await once(child, 'message')) as [Ready];
  const memory = async (): Promise<Memory> => {
    child.send('memory');
    return ((await once(child, 'message')) as [Memory])[0];
  };
  const client = new LoadClient({ Authorization: `Bearer ${ready.token}` });
  const jsonLd = { 'Content-Type': 'application/ld+json' };
  const piece = JSON.stringify(BENCH_PIECE);
  const post = () => client.send(`${ready.url}/logistics-objects`, 'POST', piece, jsonLd);
  const patch = (subject: Subject, grow: boolean) =>
    client.send(subject.iri, 'PATCH', nextChange(subject, grow), jsonLd).then((res) => {
      if (res.status === 201) subject.revision += 1;
      return res;
    });
  const newSubject = async (): Promise<Subject> => {
    const res = await post();
    return { iri: String(res.headers.location), revision: 1, goods: BENCH_PIECE['cargo:goodsDescription'], upid: BENCH_PIECE['cargo:upid'], step: 0 };
  };
  const subjects = async (n: number) => {
    const out: Subject[] = [];
    for (let i = 0; i < n; i++) out.push(await newSubject());
    return out;
  };
  /** Every PATCH answered 201 must have been accepted: the object is at revision 1 + changes sent. */
  const unaccepted = async (list: Subject[]) => {
    let missing = 0;
    for (const s of list) missing += s.revision - Number((await client.send(s.iri, 'GET')).headers['latest-revision']);
    return missing;
  };

  const sequentialObjects = await subjects(OBJECTS_PER_CLIENT);
  const concurrentObjects = await Promise.all(Array.from({ length: CLIENTS }, () => subjects(OBJECTS_PER_CLIENT)));
  // Each PATCH run right after the POST run it is compared with, so both see the same machine.
  const postSequential = await run(1, seconds, post, 201);
  let before = await memory();
  let cursor = 0;
  const patchSequential = await run(1, seconds, () => patch(sequentialObjects[cursor++ % OBJECTS_PER_CLIENT], true), 201);
  let after = await memory();
  const sequentialBytes = { rss: after.rss - before.rss, heapUsed: after.heapUsed - before.heapUsed, external: after.external - before.external, quads: after.quads - before.quads };
  const postConcurrent = await run(CLIENTS, seconds, post, 201);
  before = await memory();
  const cursors = new Array<number>(CLIENTS).fill(0);
  const patchConcurrent = await run(CLIENTS, seconds, (c) => patch(concurrentObjects[c][cursors[c]++ % OBJECTS_PER_CLIENT], true), 201);
  after = await memory();
  const missing = (await unaccepted(sequentialObjects)) + (await unaccepted(concurrentObjects.flat()));
  const revisions = patchSequential.count + patchConcurrent.count;

  // Cost growth: the same size-neutral change (2 DELETEs + 2 ADDs) on objects with 10 and 1,000 revisions.
  const [few, many] = await subjects(2);
  for (const [subject, count] of [[few, 9], [many, 999]] as const) for (let i = 0; i < count; i++) await patch(subject, false);
  const timeChanges = async (subject: Subject) => {
    const latencies: number[] = [];
    for (let i = 0; i < 200; i++) {
      const t = performance.now();
      await patch(subject, false);
      latencies.push(performance.now() - t);
    }
    return summarise(latencies, 1, 0);
  };
  const fewTime = await timeChanges(few);
  const manyTime = await timeChanges(many);
  const growthMissing = await unaccepted([few, many]);
  client.close();
  child.send('stop');
  await once(child, 'exit');

  const row = (name: string, r: RunResult, base?: RunResult) =>
    `| ${name} | ${fmt(r.perSecond)} | ${fmt(r.p50, 2)} | ${fmt(r.p99, 2)} | ${base ? fmt(r.perSecond / base.perSecond, 2) : '-'} | ${r.failures} |`;
  console.log(`machine: ${machine()}; ${seconds} s per run; fsync on, no snapshot during the runs; server in its own process`);
  console.log('| run | per s | p50 ms | p99 ms | ratio | failures |');
  console.log('|---|---|---|---|---|---|');
  console.log(row('POST Logistics Object, 1 client', postSequential));
  console.log(row(`POST Logistics Object, ${CLIENTS} clients`, postConcurrent));
  console.log(row('PATCH accepted change, 1 client (ratio: to POST, 1 client)', patchSequential, postSequential));
  console.log(row(`PATCH accepted change, ${CLIENTS} clients on distinct objects (ratio: to POST, ${CLIENTS} clients)`, patchConcurrent, postConcurrent));
  console.log(`changes answered 201 but not applied: ${missing + growthMissing}`);
  console.log(
    `change on an object with 10 revisions: p50 ${fmt(fewTime.p50, 2)} ms, p99 ${fmt(fewTime.p99, 2)} ms; with 1,000: p50 ${fmt(manyTime.p50, 2)} ms, p99 ${fmt(manyTime.p99, 2)} ms; ratio of p50 ${fmt(manyTime.p50 / fewTime.p50, 2)}`,
  );
  const cpuPerChange = (after.cpu - before.cpu) / patchConcurrent.count;
  console.log(
    `server CPU per accepted change (${CLIENTS} clients): ${fmt(cpuPerChange)} µs, so one core takes ${fmt(1e6 / cpuPerChange)} changes/s ` +
      '(the load generator shares the two cores)',
  );
  const perChange = (name: Exclude<keyof Memory, 'cpu'>) => fmt((sequentialBytes[name] + after[name] - before[name]) / revisions, name === 'quads' ? 1 : 0);
  console.log(
    `memory per accepted change (revision + its ChangeRequest), over ${fmt(revisions)} changes: ` +
      `rss ${perChange('rss')} B, JS heap ${perChange('heapUsed')} B, external (Oxigraph's WASM memory) ${perChange('external')} B, quads ${perChange('quads')}`,
  );
}

if (process.argv[2] === 'serve') await serve();
else await drive(Number(process.argv[2] ?? 10));
