/**
 * Oxigraph's in-memory store alone, without the server: loads N-Quads in equal batches and prints
 * every load that took far longer than the median, with the number of quads the store held. Those
 * pauses come each time the store's tables double, at quad counts that double too, and last in
 * proportion to what the store holds: where the SPARQL replica's tail of freshness comes from.
 *   npm run build && node dist/scripts/bench/oxigraph-growth.js [quads, default 3,600,000] [per load, default 4,000]
 */
import { oxigraph } from '../../src/store/embedded/oxigraph/oxigraph-index.js';
import { fmt, machine, percentile } from './harness.js';

const TOTAL = Number(process.argv[2] ?? 3_600_000);
const BATCH = Number(process.argv[3] ?? 4_000);
/** A load this many times the median is reported. */
const SLOW = 4;

const store = new oxigraph.Store();
const loads: { held: number; ms: number }[] = [];
let held = 0;
while (held < TOTAL) {
  const lines: string[] = [];
  // ~40 triples per graph, 8 per subject: the shape of the replica's object graphs.
  for (let i = 0; i < BATCH; i++, held++)
    lines.push(`<urn:s:${held >> 3}> <urn:p:${held & 7}> "value ${held}" <urn:g:${Math.floor(held / 40)}> .\n`);
  const bytes = Buffer.from(lines.join(''));
  const started = performance.now();
  store.load(bytes, { format: 'application/n-quads', lenient: true });
  const ms = performance.now() - started;
  loads.push({ held: held - BATCH, ms });
}
const times = loads.map((l) => l.ms);
const median = percentile(times, 0.5);
console.log(
  `${machine()}; ${fmt(TOTAL)} quads loaded ${fmt(BATCH)} at a time: median ${fmt(median, 1)} ms a load, p99 ${fmt(percentile(times, 0.99), 1)} ms`,
);
console.log('| quads held before the load | load ms | x median |');
console.log('|---:|---:|---:|');
for (const { held: before, ms } of loads)
  if (ms > SLOW * median) console.log(`| ${fmt(before)} | ${fmt(ms)} | ${fmt(ms / median, 1)} |`);
