/**
 * What metrics and request logs cost on the GET hot path: GET one Logistics Object (~40 triples,
 * valid token) under 50 connections against three servers started side by side in one run:
 * metrics off and logs off (baseline), metrics on (logs off), and metrics on with an info log
 * line per request (written to /dev/null). Each is measured alternately, `rounds` times, after a
 * 2 s warm-up, and averaged: a shared 2-core machine drifts between runs. Besides req/s, the
 * server's CPU time per request, which depends less on what else the machine runs.
 *   npm run build && node dist/scripts/bench/metrics.js [seconds] [rounds]
 */
import {
  fmt,
  load,
  machine,
  mean,
  processCpuSeconds,
  startTarget,
  WARM_UP_SECONDS,
  type LoadResult,
  type OneRecordTarget,
} from './harness.js';

const seconds = Number(process.argv[2] ?? 10);
const ROUNDS = Number(process.argv[3] ?? 2);
const connections = 50;

const variants = [
  { name: 'metrics off, logs off', env: { BENCH_METRICS: 'off', BENCH_PORT: '18411' } },
  { name: 'metrics on, logs off', env: { BENCH_METRICS: 'on', BENCH_PORT: '18412' } },
  {
    name: 'metrics on, info log line per request',
    env: { BENCH_METRICS: 'on', BENCH_LOG_LEVEL: 'info', BENCH_PORT: '18413' },
  },
];

const targets = [];
for (const v of variants) targets.push(await startTarget<OneRecordTarget>('onerecord', [], v.env));
const runs: LoadResult[][] = variants.map(() => []);
/** Server CPU µs per request, per round. */
const cpu: number[][] = variants.map(() => []);
for (let round = 0; round < ROUNDS; round++) {
  for (const [i, target] of targets.entries()) {
    const options = {
      url: target.info.oneRevision,
      headers: { Authorization: `Bearer ${target.info.token}` },
      connections,
    };
    await load({ ...options, seconds: WARM_UP_SECONDS });
    const before = processCpuSeconds(target.process.pid!);
    const result = await load({ ...options, seconds });
    cpu[i].push(((processCpuSeconds(target.process.pid!) - before) * 1e6) / (result.requestsPerSecond * seconds));
    runs[i].push(result);
  }
}
for (const target of targets) await target.stop();

const results = runs.map(mean);
const cpuPerRequest = cpu.map((list) => list.reduce((a, b) => a + b, 0) / list.length);
const [baseline, metricsOn, withLogs] = results;

console.log(
  `machine: ${machine()}; ${connections} connections, ${seconds} s each after ${WARM_UP_SECONDS} s warm-up, ${ROUNDS} alternating rounds`,
);
console.log(
  '| server | req/s | p50 ms | p99 ms | ratio vs metrics off | server CPU µs/request | CPU ratio (off / this) | errors |',
);
console.log('|---|---|---|---|---|---|---|---|');
for (const [i, v] of variants.entries()) {
  const r = results[i];
  console.log(
    `| ${v.name} | ${fmt(r.requestsPerSecond)} | ${fmt(r.p50, 1)} | ${fmt(r.p99, 1)} | ${fmt(r.requestsPerSecond / baseline.requestsPerSecond, 3)} | ${fmt(cpuPerRequest[i], 1)} | ${fmt(cpuPerRequest[0] / cpuPerRequest[i], 3)} | ${r.non2xx + r.errors} |`,
  );
}
console.log(
  `per round, req/s: ${variants.map((v, i) => `${v.name}: ${runs[i].map((r) => fmt(r.requestsPerSecond)).join(', ')}`).join('; ')}`,
);
console.log(
  `GET with metrics on vs off: ${fmt(metricsOn.requestsPerSecond / baseline.requestsPerSecond, 3)} by req/s, ${fmt(cpuPerRequest[0] / cpuPerRequest[1], 3)} by server CPU (target >= 0.97)`,
);
console.log(
  `GET with metrics and request logs vs neither: ${fmt(withLogs.requestsPerSecond / baseline.requestsPerSecond, 3)} by req/s, ${fmt(cpuPerRequest[0] / cpuPerRequest[2], 3)} by server CPU`,
);
