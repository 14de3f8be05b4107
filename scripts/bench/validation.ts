/**
 * Cost of data-model validation on the request path: the compiled shape checks timed in process on
 * what a create and a change validate (the ~40-triple bench Piece as posted; a change's Change
 * document plus the revision it produces, in the store's form), p50/p99 in µs, with the SHACL engine
 * (shacl-engine, the reference the tests compare against) timed on the same data for scale.
 * Throughput with validation on vs off: `node dist/scripts/bench/changes.js validation`.
 *   npm run build && node dist/scripts/bench/validation.js [iterations]
 */
import { readFileSync } from 'node:fs';
import { Parser } from 'n3';
import rdf from 'rdf-ext';
import Validator from 'shacl-engine/Validator.js';
import { DEFAULTS } from '../../src/config.js';
import { parseBody } from '../../src/rdf/parse.js';
import type { Quad } from '../../src/rdf/terms.js';
import { SHAPES_FILE, ShapeValidator } from '../../src/shapes/validator.js';
import { benchObject } from './fixtures.js';
import { fmt, machine, percentile } from './harness.js';

const CARGO = 'https://onerecord.iata.org/ns/cargo#';
const OBJECT = 'http://bench.invalid/logistics-objects/piece';

/** The Change of the changes benchmark (2 DELETEs, 3 ADDs), as the server parses it. */
function changeDocument(): Promise<Quad[]> {
  const operation = (op: string, p: string, value: string) => ({
    '@type': 'api:Operation',
    'api:op': { '@id': `api:${op}` },
    'api:s': OBJECT,
    'api:p': `${CARGO}${p}`,
    'api:o': {
      '@type': 'api:OperationObject',
      'api:hasDatatype': 'http://www.w3.org/2001/XMLSchema#string',
      'api:hasValue': value,
    },
  });
  const body = {
    '@context': { cargo: CARGO, api: 'https://onerecord.iata.org/ns/api#', xsd: 'http://www.w3.org/2001/XMLSchema#' },
    '@type': 'api:Change',
    'api:hasLogisticsObject': { '@id': OBJECT },
    'api:hasDescription': 'bench change',
    'api:hasRevision': { '@type': 'xsd:positiveInteger', '@value': '1' },
    'api:hasOperation': [
      operation('DELETE', 'goodsDescription', 'a'),
      operation('ADD', 'goodsDescription', 'b'),
      operation('DELETE', 'upid', 'c'),
      operation('ADD', 'upid', 'd'),
      operation('ADD', 'shippingMarks', 'e'),
    ],
  };
  return parseBody(Buffer.from(JSON.stringify(body)), 'jsonld', {
    base: 'http://bench.invalid/',
    limits: DEFAULTS.limits,
  });
}

async function timeEach(iterations: number, run: () => unknown): Promise<{ p50: number; p99: number }> {
  for (let i = 0; i < Math.min(1000, iterations); i++) await run(); // warm-up
  const samples: number[] = [];
  for (let i = 0; i < iterations; i++) {
    const t = performance.now();
    await run();
    samples.push((performance.now() - t) * 1000);
  }
  return { p50: percentile(samples, 0.5), p99: percentile(samples, 0.99) };
}

const iterations = Number(process.argv[2] ?? 20_000);
const validator = ShapeValidator.fromFiles();
// A change validates its Change document and the whole revision it produces (a Piece of the same size).
const created = await benchObject();
const change = await changeDocument();
const revision = created;
if (validator.validate(created).length > 0 || validator.validate(change).length > 0)
  throw new Error('bench data must be valid');

const create = await timeEach(iterations, () => validator.validate(created));
const perChange = await timeEach(iterations, () => {
  validator.validate(change);
  return validator.validate(revision);
});
const shapes = new Parser().parse(readFileSync(SHAPES_FILE, 'utf8'));
const engine = new Validator(rdf.dataset(shapes), { factory: rdf });
const hierarchy = shapes.filter((q) => q.predicate.value.endsWith('#subClassOf'));
const reference = await timeEach(Math.min(iterations, 500), () =>
  engine.validate({ dataset: rdf.dataset([...created, ...hierarchy]) }),
);

console.log(`machine: ${machine()}; ${fmt(iterations)} validations each; compiled shape checks in process`);
console.log('| what is validated | triples | p50 µs | p99 µs |');
console.log('|---|---|---|---|');
console.log(
  `| create: the bench Piece as posted | ${created.length} | ${fmt(create.p50, 1)} | ${fmt(create.p99, 1)} |`,
);
console.log(
  `| change: the Change document + the resulting revision | ${change.length} + ${revision.length} | ${fmt(perChange.p50, 1)} | ${fmt(perChange.p99, 1)} |`,
);
console.log(
  `| create, with the SHACL engine (shacl-engine) for scale | ${created.length} | ${fmt(reference.p50, 1)} | ${fmt(reference.p99, 1)} |`,
);
