/**
 * JSON-LD body parsing, jsonld.js against the hand-written fast path (src/rdf/jsonld-fast.ts), on
 * the official Change and LogisticsEvent examples and the bench Piece: time per document from
 * its JSON text (each run parses the text, as each request does: jsonld.js caches processed
 * contexts by object, so reusing one object would flatter it), and for the whole parseBody.
 *   npm run build && node dist/scripts/bench/jsonld-parse.js [milliseconds per measurement]
 */
import { readFileSync } from 'node:fs';
import { DEFAULTS } from '../../src/config.js';
import { fastJsonLdToQuads } from '../../src/rdf/jsonld-fast.js';
import { jsonLdToQuads } from '../../src/rdf/jsonld-reference.js';
import { parseBody } from '../../src/rdf/parse.js';
import { BENCH_PIECE } from './fixtures.js';
import { machine } from './harness.js';

const budgetMs = Number(process.argv[2] ?? 1000);
const options = { base: 'http://bench.invalid/logistics-objects/', limits: DEFAULTS.limits };
const example = (name: string): unknown =>
  JSON.parse(readFileSync(new URL(`../../../test/fixtures/onerecord-examples/${name}`, import.meta.url), 'utf8'));

const bodies: [string, unknown][] = [
  ['Change_example1.json (3 operations)', example('Change_example1.json')],
  ['bench Piece (40 triples)', BENCH_PIECE],
  ['LogisticsEvent.json', example('LogisticsEvent.json')],
];

/** Microseconds per call of `run`, after a warm-up, over about `budgetMs`. */
async function timePerCall(run: () => unknown): Promise<number> {
  for (let i = 0; i < 200; i++) await run();
  let calls = 0;
  const started = process.hrtime.bigint();
  const deadline = started + BigInt(budgetMs) * 1_000_000n;
  let now = started;
  while (now < deadline) {
    for (let i = 0; i < 50; i++) await run();
    calls += 50;
    now = process.hrtime.bigint();
  }
  return Number(now - started) / 1000 / calls;
}

const fmt = (us: number) => `${us.toFixed(1)} µs`;
console.log(`JSON-LD parsing on ${machine()}`);
console.log('| body | triples | jsonld.js | fast path | speed-up | parseBody (fast path) |');
console.log('| --- | --- | --- | --- | --- | --- |');
for (const [name, document] of bodies) {
  const fast = fastJsonLdToQuads(document);
  if (!fast) throw new Error(`${name} is not taken by the fast path`);
  const json = JSON.stringify(document);
  const text = Buffer.from(json);
  const slowUs = await timePerCall(() => jsonLdToQuads(JSON.parse(json), options));
  const fastUs = await timePerCall(() => fastJsonLdToQuads(JSON.parse(json)));
  const bodyUs = await timePerCall(() => parseBody(text, 'jsonld', options));
  console.log(
    `| ${name} | ${fast.quads.length} | ${fmt(slowUs)} | ${fmt(fastUs)} | ${(slowUs / fastUs).toFixed(0)}x | ${fmt(bodyUs)} |`,
  );
}
