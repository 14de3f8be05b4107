/**
 * Store compaction (issue: capacity): the memory one process takes for objects of ~50 triples, each
 * changed 20 times, with compaction on and off, in the same run. Each fill starts from an empty data
 * directory in this process and writes `--objects` objects through the store's commit path
 * (history-fill.ts: 10 objects' next revisions per commit, fsync off); then, after a full garbage
 * collection, the process's RSS is read (the WASM memory's size says nothing: the index grows it
 * ahead of need, untouched). Oxigraph keeps the memory of every deleted quad, so without compaction
 * the memory per object grows with the changes; the 4 GiB WASM memory divided by it is the capacity.
 *   node --expose-gc dist/scripts/bench/compaction.js [--objects 10000] [--only on|off]
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { DEFAULTS } from '../../src/config.js';
import { parseBody } from '../../src/rdf/parse.js';
import { CAPACITY_PIECE } from './fixtures.js';
import { fmt, machine } from './harness.js';
import { fillThroughStore } from './history-fill.js';

const { values } = parseArgs({ options: { objects: { type: 'string', default: '10000' }, only: { type: 'string' } } });
const MB = 2 ** 20;
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc');
const settledRss = async () => {
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return process.memoryUsage();
};
const parsed = await parseBody(Buffer.from(JSON.stringify(CAPACITY_PIECE)), 'jsonld', {
  base: 'http://bench.invalid/',
  limits: DEFAULTS.limits,
});

console.log(
  `compaction benchmark, ${machine()}, ${new Date().toISOString()}; ${values.objects} objects of ${parsed.length} triples x 21 revisions`,
);
console.log(
  '| compaction | objects | quads held | compactions | fill s | RSS MB (empty store) | RSS MB (filled) | JS heap MB | RSS per object KB |',
);
console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const mode of values.only ? [values.only] : ['off', 'on']) {
  const dir = await mkdtemp(join(tmpdir(), 'onerecord-bench-compaction-'));
  const log: string[] = [];
  const empty = (await settledRss()).rss;
  try {
    let filled: NodeJS.MemoryUsage | undefined;
    const result = await fillThroughStore(dir, {
      base: 'http://127.0.0.1:18601',
      parsed,
      objects: Number(values.objects),
      revisions: 21,
      perCommit: 10,
      store: {
        compactAfterDeletedQuads: mode === 'on' ? DEFAULTS.store.compactAfterDeletedQuads : 0,
        log: (line) => log.push(line),
      },
      beforeClose: async () => {
        filled = await settledRss();
      },
    });
    const compactions = log.filter((line) => line.startsWith('store compacted')).length;
    console.log(
      `| ${mode} | ${fmt(result.objects)} | ${fmt(result.quadsAfter)} | ${compactions} | ${fmt(result.seconds, 1)} | ${fmt(empty / MB)} | ${fmt(filled!.rss / MB)} | ${fmt(filled!.heapUsed / MB)} | ${fmt((filled!.rss - empty) / 1024 / result.objects, 1)} |`,
    );
    for (const line of log.filter((l) => l.startsWith('compacting') || l.startsWith('store compacted')))
      console.log(`  store: ${line}`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
