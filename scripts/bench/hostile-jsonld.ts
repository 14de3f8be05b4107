/**
 * Hostile JSON-LD bodies against a real server (own process, loopback): latency of `GET /` from
 * one sequential client, alone and while hostile clients keep sending PATCH bodies that would
 * freeze an unguarded server:
 *  - the scoped-context body of issue 15 (8,000 terms each with an empty scoped context, ~300 KB),
 *    refused by the context count before any reader runs;
 *  - a body within every count but slow in jsonld.js (a type-scoped context applied to 3,000
 *    nodes), stopped on the worker thread at the time budget.
 * Also times jsonld.js on the request thread for the scoped-context body of 2,000 terms, which is
 * what one such request cost before.
 *   npm run build && node dist/scripts/bench/hostile-jsonld.js [seconds] [hostile clients]
 */
import { DEFAULTS } from '../../src/config.js';
import { jsonLdToQuads } from '../../src/rdf/jsonld-reference.js';
import { CARGO } from '../../src/rdf/vocab.js';
import { typeScopedNodes } from './fixtures.js';
import { fmt, LoadClient, machine, percentile, startTarget, type OneRecordTarget } from './harness.js';

const seconds = Number(process.argv[2] ?? 10);
const hostileClients = Number(process.argv[3] ?? 4);

function scopedContextBomb(terms: number): Record<string, unknown> {
  const context: Record<string, unknown> = { cargo: CARGO };
  for (let i = 0; i < terms; i++) context[`t${i}`] = { '@id': `http://x.example/${i}`, '@context': {} };
  return { '@context': context, '@type': 'cargo:Piece', t1: 'x' };
}

/** GET / one after another for `seconds`: latencies in ms, sorted. */
async function getLatencies(client: LoadClient, url: string): Promise<number[]> {
  const latencies: number[] = [];
  const end = Date.now() + seconds * 1000;
  while (Date.now() < end) {
    const started = process.hrtime.bigint();
    const res = await client.send(`${url}/`, 'GET');
    if (res.status !== 200) throw new Error(`GET / answered ${res.status}`);
    latencies.push(Number(process.hrtime.bigint() - started) / 1e6);
  }
  return latencies.sort((a, b) => a - b);
}

const before = scopedContextBomb(2000);
const started = performance.now();
await jsonLdToQuads(before, {
  base: 'http://bench.invalid/logistics-objects/',
  limits: { ...DEFAULTS.limits, contextTerms: Infinity },
});
const unguardedMs = performance.now() - started;

const target = await startTarget<OneRecordTarget>('onerecord', [], { BENCH_REVISIONS: '1' });
const { url, token, oneRevision } = target.info;
const headers = { Authorization: `Bearer ${token}` };
const getter = new LoadClient(headers);
await getLatencies(getter, url); // warm-up: the same run, discarded
const alone = await getLatencies(getter, url);

const bodies = [JSON.stringify(scopedContextBomb(8000)), JSON.stringify(typeScopedNodes(3000))];
const statuses = new Map<string, number>();
let stop = false;
const hostile = Array.from({ length: hostileClients }, async (_, i) => {
  const client = new LoadClient({ ...headers, 'Content-Type': 'application/ld+json' });
  for (let n = i; !stop; n++) {
    const kind = n % 2 === 0 ? 'context count' : 'worker budget';
    const res = await client.send(oneRevision, 'PATCH', bodies[n % 2]);
    const key = `${kind}: ${res.status}`;
    statuses.set(key, (statuses.get(key) ?? 0) + 1);
  }
  client.close();
});
const underAttack = await getLatencies(getter, url);
stop = true;
await Promise.all(hostile);
getter.close();
await target.stop();

const row = (name: string, l: number[], ratio: string) =>
  `| ${name} | ${fmt(l.length)} | ${fmt(percentile(l, 0.5), 2)} | ${fmt(percentile(l, 0.99), 2)} | ${fmt(l[l.length - 1], 1)} | ${ratio} |`;
console.log(`Hostile JSON-LD, ${seconds} s per run, ${hostileClients} hostile clients, on ${machine()}`);
console.log(
  `jsonld.js on the request thread, scoped-context body of 2,000 terms (what each such request blocked before): ${fmt(unguardedMs)} ms`,
);
console.log('| GET / (one sequential client) | requests | p50 ms | p99 ms | max ms | p99 ratio |');
console.log('| --- | --- | --- | --- | --- | --- |');
console.log(row('alone', alone, '-'));
console.log(
  row('while hostile PATCHes arrive', underAttack, fmt(percentile(underAttack, 0.99) / percentile(alone, 0.99), 1)),
);
console.log(`hostile answers: ${[...statuses].map(([k, v]) => `${k} × ${v}`).join(', ')}`);
