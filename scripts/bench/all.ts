/**
 * The ratios issue 33 watches, in one run of under 10 minutes, as one table in the form of
 * BENCHMARKS.md's first table (its latest run goes there), with the date and commit:
 *   - GET of one Logistics Object against bare express, and GET latest of an object with 500 vs 1
 *     revision (get.ts, `getSeconds` per measurement);
 *   - POST and PATCH with 20 clients against the write baseline (write-baseline.ts), by rate and by
 *     server CPU per request, all threads (changes.ts throughput, `writeSeconds` per run, once each).
 *   npm run bench:all -- [getSeconds] [writeSeconds]      (defaults 10 and 8)
 */
import { execFileSync } from 'node:child_process';
import { againstBaseline, CPU_GOAL, measureThroughput, THROUGHPUT_GOAL } from './changes.js';
import { GET_GOAL, measureGet, REVISIONS_GOAL } from './get.js';
import { fmt, machine } from './harness.js';

const getSeconds = Number(process.argv[2] ?? 10);
const writeSeconds = Number(process.argv[3] ?? 8);

const git = (...args: string[]) => execFileSync('git', args, { encoding: 'utf8' }).trim();
const commit = `\`${git('rev-parse', '--short', 'HEAD')}\`${git('status', '--porcelain', '--untracked-files=no') ? ' + uncommitted changes' : ''}`;
const date = new Date().toISOString().slice(0, 10);
const started = performance.now();

const get = await measureGet(getSeconds);
const writes = await measureThroughput(writeSeconds, 1);
const ratios = againstBaseline(writes);

const command = `\`npm run bench:all${process.argv.length > 2 ? ` -- ${getSeconds} ${writeSeconds}` : ''}\``;
const met = (ok: boolean) => (ok ? 'yes' : 'no');
const rows: [what: string, figure: string, baseline: string, goal: string, ok: boolean][] = [];
const getRatio = get.getOne.requestsPerSecond / get.bareExpress.requestsPerSecond;
rows.push([
  'GET one Logistics Object vs bare express',
  `${fmt(getRatio, 2)}× (${fmt(get.getOne.requestsPerSecond)} req/s)`,
  `bare express: ${fmt(get.bareExpress.requestsPerSecond)} req/s`,
  `≥ ${GET_GOAL}`,
  getRatio >= GET_GOAL,
]);
const revisions = get.getOne.requestsPerSecond / get.getMany.requestsPerSecond;
rows.push([
  'GET latest, object with 500 vs 1 revision (time ratio)',
  fmt(revisions, 2),
  `object with 1 revision: ${fmt(get.getOne.requestsPerSecond)} req/s`,
  `≤ ${REVISIONS_GOAL}`,
  revisions <= REVISIONS_GOAL,
]);
for (const [name, run, baseline, ratio, cpu, baselineCpu, per] of [
  [
    'POST',
    writes.post,
    writes.baselinePost,
    ratios.post,
    writes.post.cpuPerPost,
    writes.baselinePost.cpuPerPost,
    'object',
  ],
  [
    'PATCH',
    writes.patch,
    writes.baselinePatch,
    ratios.patch,
    writes.patch.cpuPerChange,
    writes.baselinePatch.cpuPerChange,
    'accepted change',
  ],
] as const) {
  rows.push([
    `${name}, 20 clients, vs the write baseline (rate)`,
    `${fmt(ratio.rate, 2)}× (${fmt(run.perSecond)}/s)`,
    `baseline ${name}: ${fmt(baseline.perSecond)}/s`,
    `≥ ${THROUGHPUT_GOAL}`,
    ratio.rate >= THROUGHPUT_GOAL,
  ]);
  rows.push([
    `${name}, 20 clients, server CPU per ${per} vs the write baseline`,
    `${fmt(ratio.cpu, 2)}× (${fmt(cpu)} µs)`,
    `baseline ${name}: ${fmt(baselineCpu)} µs`,
    `≤ ${CPU_GOAL}`,
    ratio.cpu <= CPU_GOAL,
  ]);
}

console.log(
  `machine: ${machine()}; ${fmt((performance.now() - started) / 60_000, 1)} min; GET ${getSeconds} s per measurement; POST and PATCH ${writeSeconds} s per run after the warm-up, once each, 20 clients`,
);
console.log('| What | Command | Date | Commit | Figure | Same-run baseline | Goal | Met? |');
console.log('|---|---|---|---|---|---|---|---|');
for (const [what, figure, baseline, goal, ok] of rows)
  console.log(`| ${what} | ${command} | ${date} | ${commit} | ${figure} | ${baseline} | ${goal} | ${met(ok)} |`);
const failures =
  get.bareExpress.non2xx +
  get.getOne.non2xx +
  get.getMany.non2xx +
  get.post.non2xx +
  writes.post.failures +
  writes.patch.failures +
  writes.baselinePost.failures +
  writes.baselinePatch.failures;
console.log(`failed requests: ${failures}; changes answered 201 but not applied: ${writes.patch.missing}`);
