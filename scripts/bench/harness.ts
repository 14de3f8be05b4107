import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { cpus } from 'node:os';
import autocannon from 'autocannon';

export interface Target<T> {
  info: T;
  process: ChildProcess;
  stop(): Promise<void>;
}

const TARGETS = fileURLToPath(new URL('./targets.js', import.meta.url));

/** Starts a benchmark target in its own process and waits for its JSON ready line. */
export async function startTarget<T>(kind: string, args: string[] = [], env: NodeJS.ProcessEnv = {}): Promise<Target<T>> {
  const child = spawn(process.execPath, [TARGETS, kind, ...args], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...env } });
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

export interface LoadResult {
  requestsPerSecond: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}

/** Runs autocannon against one URL. */
export async function load(opts: { url: string; connections: number; seconds: number; headers?: Record<string, string>; method?: 'GET' | 'POST'; body?: string }): Promise<LoadResult> {
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

export function machine(): string {
  return `${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version}`;
}

export const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
