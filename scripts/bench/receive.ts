/**
 * The subscriber's CPU per notification received (issue 11): POST /notifications with distinct
 * notifications as a publisher sends them (LOGISTICS_OBJECT_UPDATED, its changed property and
 * revision, `Idempotency-Key`), from `connections` kept-alive connections, against
 *   - a bare node:http server that reads each body, parses it as JSON, drops a duplicate @id and
 *     answers 204 (the baseline: what receiving costs at the least), and
 *   - the ONE Record server (the benchmark target of targets.ts: a holder's token, a fresh data
 *     directory, fsync on, metrics on) from this build, and, with `--build <label>=<dist>` (repeated),
 *     from other builds (their `dist` directory: same targets.js), alternating, in the same run.
 * Each target's CPU (all its threads, from /proc, 10 ms ticks) over `count` notifications after a
 * warm-up of `count / 4`, divided by `count`; run under the CPU lock. With PROFILE_DIR set, each ONE
 * Record target writes a V8 CPU profile there (node --cpu-prof) when it stops.
 *   node dist/scripts/bench/receive.js [count=4000] [rounds=2] [connections=8] [--build <label>=<dist>]...
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:http';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import {
  cpuProfileFlags,
  fmt,
  LoadClient,
  machine,
  processCpuSeconds,
  SERVER_NODE_FLAGS,
  type OneRecordTarget,
} from './harness.js';

const HERE = fileURLToPath(import.meta.url);

interface Running {
  label: string;
  url: string;
  token?: string;
  process: ChildProcess;
}

async function startBare(): Promise<Running> {
  const child = fork(HERE, ['bare'], { execArgv: SERVER_NODE_FLAGS });
  process.once('exit', () => child.kill('SIGKILL'));
  const [info] = (await once(child, 'message')) as [{ url: string }];
  return { label: 'bare node:http', url: info.url, process: child };
}

async function startOneRecord(label: string, dist: string): Promise<Running> {
  // No objects beyond the target's first two, and no long history: only notifications are written.
  const child = spawn(
    process.execPath,
    [
      ...SERVER_NODE_FLAGS,
      ...cpuProfileFlags(process.env.PROFILE_DIR),
      `${dist}/scripts/bench/targets.js`,
      'onerecord',
    ],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, BENCH_REVISIONS: '1' },
    },
  );
  process.once('exit', () => child.kill('SIGKILL'));
  const [line] = (await once(createInterface({ input: child.stdout! }), 'line')) as [string];
  const info = JSON.parse(line) as OneRecordTarget;
  return { label, url: info.url, token: info.token, process: child };
}

async function stop(target: Running): Promise<void> {
  target.process.kill('SIGTERM');
  await once(target.process, 'exit');
}

const PUBLISHER = 'https://publisher.example.com';

/** Notification `n` of run `run`, as a publisher's outbox writes one. */
function notification(run: string, n: number): { id: string; body: string } {
  const id = `${PUBLISHER}/notifications/${run}-${n}`;
  const body = JSON.stringify({
    '@context': {
      api: 'https://onerecord.iata.org/ns/api#',
      cargo: 'https://onerecord.iata.org/ns/cargo#',
      xsd: 'http://www.w3.org/2001/XMLSchema#',
    },
    '@id': id,
    '@type': 'api:Notification',
    'api:hasEventType': { '@id': 'api:LOGISTICS_OBJECT_UPDATED' },
    'api:hasLogisticsObject': { '@id': `${PUBLISHER}/logistics-objects/${n % 100}` },
    'api:hasLogisticsObjectType': { '@type': 'xsd:anyURI', '@value': 'https://onerecord.iata.org/ns/cargo#Piece' },
    'api:hasChangedProperty': {
      '@type': 'xsd:anyURI',
      '@value': 'https://onerecord.iata.org/ns/cargo#goodsDescription',
    },
    'api:hasRevision': n + 2,
  });
  return { id, body };
}

/** Sends notifications `from` to `to` (exclusive) over `connections` connections; returns the wall time (s). */
async function send(target: Running, run: string, from: number, to: number, connections: number): Promise<number> {
  const client = new LoadClient({
    'Content-Type': 'application/ld+json',
    ...(target.token ? { Authorization: `Bearer ${target.token}` } : {}),
  });
  let next = from;
  const started = performance.now();
  const worker = async () => {
    while (next < to) {
      const { id, body } = notification(run, next++);
      const res = await client.send(`${target.url}/notifications`, 'POST', body, { 'Idempotency-Key': id });
      if (res.status !== 204) throw new Error(`${target.label} answered ${res.status}`);
    }
  };
  await Promise.all(Array.from({ length: connections }, worker));
  client.close();
  return (performance.now() - started) / 1000;
}

/** CPU ms per notification and notifications/s of one measured run (after a warm-up). */
async function measure(
  target: Running,
  run: string,
  count: number,
  connections: number,
): Promise<{ cpuMs: number; perSecond: number }> {
  const warmUp = Math.ceil(count / 4);
  await send(target, run, 0, warmUp, connections);
  const before = processCpuSeconds(target.process.pid!);
  const seconds = await send(target, run, warmUp, warmUp + count, connections);
  const cpu = processCpuSeconds(target.process.pid!) - before;
  return { cpuMs: (cpu * 1000) / count, perSecond: count / seconds };
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const builds: [string, string][] = [];
  for (let at = args.indexOf('--build'); at >= 0; at = args.indexOf('--build')) {
    const [label, dist] = args.splice(at, 2)[1].split('=');
    builds.push([`ONE Record ${label}`, dist]);
  }
  const [count = 4000, rounds = 2, connections = 8] = args.map(Number);
  const thisDist = fileURLToPath(new URL('../..', import.meta.url)).replace(/\/$/, '');
  console.log(
    `# POST /notifications: subscriber CPU per notification (${machine()}); ${count} notifications per run after ${Math.ceil(count / 4)} of warm-up, ${connections} connections, ${rounds} rounds`,
  );
  const starters: [string, () => Promise<Running>][] = [
    ['bare node:http', startBare],
    ...builds.map(([label, dist]): [string, () => Promise<Running>] => [label, () => startOneRecord(label, dist)]),
    ['ONE Record (this build)', () => startOneRecord('ONE Record (this build)', thisDist)],
  ];
  const results = new Map<string, { cpuMs: number; perSecond: number }[]>();
  for (let round = 1; round <= rounds; round++) {
    for (const [label, start] of starters) {
      const target = await start();
      try {
        const result = await measure(target, `r${round}-${Date.now()}`, count, connections);
        results.set(label, [...(results.get(label) ?? []), result]);
        console.log(
          `round ${round} ${label.padEnd(28)} ${fmt(result.cpuMs, 3)} ms CPU per notification, ${fmt(result.perSecond)} notifications/s`,
        );
      } finally {
        await stop(target);
      }
    }
  }
  const avg = (label: string) => {
    const list = results.get(label)!;
    return {
      cpuMs: list.reduce((s, r) => s + r.cpuMs, 0) / list.length,
      perSecond: list.reduce((s, r) => s + r.perSecond, 0) / list.length,
    };
  };
  const bare = avg('bare node:http');
  console.log('\n| target | CPU per notification | ratio to bare | notifications/s |\n|---|---|---|---|');
  for (const [label] of starters) {
    const r = avg(label);
    console.log(`| ${label} | ${fmt(r.cpuMs, 3)} ms | ${fmt(r.cpuMs / bare.cpuMs, 1)} | ${fmt(r.perSecond)} |`);
  }
}

if (process.argv[2] === 'bare') {
  const seen = new Set<string>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const id = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { '@id': string })['@id'];
      seen.add(id);
      res.writeHead(204).end();
    });
  }).listen(0, '127.0.0.1', () =>
    process.send!({ url: `http://127.0.0.1:${(server.address() as { port: number }).port}` }),
  );
} else {
  await main();
}
