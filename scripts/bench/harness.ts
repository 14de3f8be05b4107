import { createServer } from 'node:net';
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'node:http';
import { cpus } from 'node:os';
import autocannon from 'autocannon';

export interface Target<T> {
  info: T;
  process: ChildProcess;
  stop(): Promise<void>;
}

const TARGETS = fileURLToPath(new URL('./targets.js', import.meta.url));

/**
 * Node flags the server runs with under `npm start` (package.json), so benchmarks measure the
 * server as it is deployed: a 64 MB young generation makes the write path's short-lived objects
 * die young instead of being copied and promoted (measured: ~10% more changes/s).
 */
/** CPU seconds (user + system) process `pid` has used so far; Linux /proc, 10 ms ticks. */
export function processCpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** The Node flags `npm start` gives the server (package.json); BENCH_NODE_FLAGS (space-separated) replaces them, to weigh others. */
export const SERVER_NODE_FLAGS = process.env.BENCH_NODE_FLAGS?.split(' ').filter(Boolean) ?? [
  '--max-semi-space-size=64',
];

/** Node flags that make a process write a V8 CPU profile into `dir` when it exits (none without a directory). */
export const cpuProfileFlags = (dir: string | undefined, intervalUs?: string): string[] =>
  dir ? ['--cpu-prof', `--cpu-prof-dir=${dir}`, ...(intervalUs ? [`--cpu-prof-interval=${intervalUs}`] : [])] : [];

/** Starts a benchmark target in its own process and waits for its JSON ready line. */
export async function startTarget<T>(
  kind: string,
  args: string[] = [],
  env: NodeJS.ProcessEnv = {},
): Promise<Target<T>> {
  const child = spawn(process.execPath, [...SERVER_NODE_FLAGS, TARGETS, kind, ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, ...env },
  });
  // A driver that fails half-way must not leave its target serving (and holding its port).
  process.once('exit', () => child.kill('SIGKILL'));
  const lines = createInterface({ input: child.stdout! });
  const [line] = (await once(lines, 'line')) as [string];
  return {
    info: JSON.parse(line) as T,
    process: child,
    async stop() {
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}

/** What the `onerecord` target reports once it listens (targets.ts). */
export interface OneRecordTarget {
  url: string;
  /** Speaks for the data holder. */
  token: string;
  /** An object of ~40 triples with one revision. */
  oneRevision: string;
  /** The same kind of object with BENCH_REVISIONS (500) revisions. */
  manyRevisions: string;
  /** BENCH_PARTNERS partner organisations with their tokens. */
  partners: { agent: string; token: string }[];
}

/** What a benchmark server process sends its driver once it listens (changes.ts, write-baseline.ts). */
export interface BenchServerReady {
  url: string;
  token: string;
}

/** What a benchmark server process answers a 'memory' message with: its counters now, after a full GC. */
export interface BenchServerSample {
  /** CPU time (user + system) of the whole process so far, every thread, µs. */
  cpu: number;
  /** The SPARQL engine's CPU time so far, µs (0 on the embedded store). */
  engineCpu: number;
  /** When `cpu` was read: process.hrtime in µs, the clock of V8's CPU profiles (profile-breakdown.ts). */
  at: number;
  pid: number;
  heapUsed: number;
  external: number;
  rss: number;
  quads: number;
  /** Each thread of the process (Linux thread id): its CPU time so far and when it started, µs (profile-breakdown.ts). */
  threads: ThreadCpu[];
}

export interface ThreadCpu {
  tid: number;
  /** CPU time (user + system) so far, µs, in 10 ms ticks. */
  cpu: number;
  /** When the thread started, µs on the monotonic clock (10 ms ticks). */
  start: number;
}

/** The threads of this process from /proc (Linux; none elsewhere). */
export function threadCpu(): ThreadCpu[] {
  let tids: string[];
  try {
    tids = readdirSync('/proc/self/task');
  } catch {
    return [];
  }
  return tids.flatMap((tid) => {
    try {
      const fields = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8').split(') ')[1].split(' ');
      // Fields 14, 15 (utime, stime) and 22 (starttime) of proc(5), in clock ticks of 10 ms.
      return [
        {
          tid: Number(tid),
          cpu: (Number(fields[11]) + Number(fields[12])) * 10_000,
          start: Number(fields[19]) * 10_000,
        },
      ];
    } catch {
      return []; // the thread ended meanwhile
    }
  });
}

/** A benchmark server in a process of its own (forkBenchServer), with a client that speaks for its data holder. */
export interface ForkedBenchServer<Ready extends BenchServerReady = BenchServerReady> {
  ready: Ready;
  client: LoadClient;
  /** The process's BenchServerSample, after a full GC. */
  sample(): Promise<BenchServerSample>;
  stop(): Promise<void>;
}

/**
 * Forks `script` with `args` as a benchmark server (the deployed Node flags, `--expose-gc`, a CPU
 * profile into BENCH_PROFILE_DIR if set) and waits for its BenchServerReady. The script answers a
 * 'memory' message with its BenchServerSample and exits after 'stop'. A process that exits before
 * it is ready (a server that failed to start) rejects, rather than leave the run waiting.
 */
export async function forkBenchServer<Ready extends BenchServerReady>(
  script: string,
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<ForkedBenchServer<Ready>> {
  const child = fork(script, args, {
    execArgv: [...SERVER_NODE_FLAGS, '--expose-gc', ...cpuProfileFlags(process.env.BENCH_PROFILE_DIR)],
    env: { ...process.env, ...env },
  });
  const exited = once(child, 'exit').then(([code]) => {
    throw new Error(`the server process ${script} ${args.join(' ')} exited (${code}) before it was ready`);
  });
  const [ready] = (await Promise.race([once(child, 'message'), exited])) as [Ready];
  exited.catch(() => undefined);
  const client = new LoadClient({ Authorization: `Bearer ${ready.token}` });
  return {
    ready,
    client,
    async sample() {
      child.send('memory');
      return ((await once(child, 'message')) as [BenchServerSample])[0];
    },
    async stop() {
      client.close();
      child.send('stop');
      await once(child, 'exit');
    },
  };
}

/** This process's sample; `quads` is counted first, so the counting is not charged to the run after it. */
export function benchServerSample(quads: number, engineCpu = 0): BenchServerSample {
  (globalThis as { gc?: () => void }).gc?.();
  const m = process.memoryUsage();
  const cpu = process.cpuUsage();
  const at = Number(process.hrtime.bigint() / 1000n);
  return {
    cpu: cpu.user + cpu.system,
    engineCpu,
    at,
    pid: process.pid,
    heapUsed: m.heapUsed,
    external: m.external,
    rss: m.rss,
    quads,
    threads: threadCpu(),
  };
}

/** Seconds of load before each measured run, so the server's JIT and caches are warm. */
export const WARM_UP_SECONDS = 2;

/** `p` (0 to 1) of `values` (any order; NaN when there are none). */
export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
}

export interface LoadResult {
  requestsPerSecond: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}

type LoadOptions = {
  url: string;
  connections: number;
  seconds: number;
  headers?: Record<string, string>;
  method?: 'GET' | 'POST';
  body?: string;
};

/** `load` after a warm-up of WARM_UP_SECONDS on the same URL. */
export async function warmLoad(opts: LoadOptions): Promise<LoadResult> {
  await load({ ...opts, seconds: WARM_UP_SECONDS });
  return load(opts);
}

/** What a closed-loop run measured: successful requests per second, their latency (ms), the failed ones. */
export interface LoopResult {
  perSecond: number;
  p50: number;
  p99: number;
  failures: number;
  count: number;
}

/**
 * `clients` loops issuing requests back to back for `seconds`, for loads that vary each request
 * (autocannon sends one fixed request); a request fails unless it answers `expected`.
 */
export async function closedLoop(
  clients: number,
  seconds: number,
  request: (client: number) => Promise<{ status: number }>,
  expected: number,
): Promise<LoopResult> {
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
  return {
    perSecond: latencies.length / ((performance.now() - started) / 1000),
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    failures,
    count: latencies.length,
  };
}

/** Runs autocannon against one URL. */
export async function load(opts: LoadOptions): Promise<LoadResult> {
  const result = await autocannon({
    url: opts.url,
    connections: opts.connections,
    duration: opts.seconds,
    headers: opts.headers,
    method: opts.method ?? 'GET',
    body: opts.body,
  });
  return {
    requestsPerSecond: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
  };
}

/** The average of several runs of one measurement. */
export const mean = (results: LoadResult[]): LoadResult => {
  const avg = (pick: (r: LoadResult) => number) => results.reduce((sum, r) => sum + pick(r), 0) / results.length;
  return {
    requestsPerSecond: avg((r) => r.requestsPerSecond),
    p50: avg((r) => r.p50),
    p99: avg((r) => r.p99),
    non2xx: avg((r) => r.non2xx),
    errors: avg((r) => r.errors),
  };
};

export interface SentRequest {
  status: number;
  headers: Record<string, string | string[] | undefined>;
}

/**
 * A lean keep-alive HTTP client for load generators that must track state per request (which
 * autocannon cannot): it drains bodies without keeping them. On this 2-core machine `fetch`
 * costs the client about 3x the CPU per request, taken from the same cores as the server.
 */
export class LoadClient {
  // Idle connections are closed here before the server closes them (it says `Keep-Alive: timeout=5`;
  // Node 20's agent applies that hint only to lower a timeout given here): otherwise a request sent
  // on a connection the server is closing at that moment is reset (ECONNRESET), which happened when
  // a slow phase made the lanes take connections that had been idle for seconds.
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 256, timeout: 4_000 });

  constructor(private readonly headers: Record<string, string>) {}

  send(url: string, method: string, body?: string, headers: Record<string, string> = {}): Promise<SentRequest> {
    return new Promise((resolve, reject) => {
      const all = {
        ...this.headers,
        ...headers,
        ...(body === undefined ? {} : { 'Content-Length': String(Buffer.byteLength(body)) }),
      };
      const req = request(url, { method, headers: all, agent: this.agent }, (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers }));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(body);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

export function machine(): string {
  return `${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version}`;
}

export const fmt = (n: number, digits = 0) =>
  n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

/** A TCP port free on loopback now. */
export async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as { port: number }).port;
  server.close();
  return port;
}
