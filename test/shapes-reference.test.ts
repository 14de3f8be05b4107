import { readdirSync } from 'node:fs';
import { expect } from 'chai';
import fc from 'fast-check';
import { Parser } from 'n3';
import { blankNode, literal, namedNode, quad, type Quad, type Term } from '../src/rdf/terms.js';
import { API, CARGO, CODE_LISTS, rdf, RDF, XSD } from '../src/rdf/vocab.js';
import { SHAPES_FILE, ShapeValidator, type Violation } from '../src/shapes/validator.js';
import { readFileSync } from 'node:fs';
import { EXAMPLES_DIR, readExample } from './support/examples.js';
import { jsonLdToQuads } from './support/rdf-compare.js';
import { failureKey, ReferenceValidator, type Verdict } from './support/shacl-reference.js';

const verdictOf = (violations: Violation[]): Verdict => ({
  conforms: violations.length === 0,
  failures: [...new Set(violations.map((v) => failureKey(v.focusNode, v.path)))].sort(),
});

const EXAMPLE_NAMES = readdirSync(EXAMPLES_DIR)
  .filter((n) => n.endsWith('.json'))
  .sort();
const examples = new Map<string, Quad[]>();
for (const name of EXAMPLE_NAMES)
  examples.set(name, await jsonLdToQuads(JSON.parse(readExample(name)), 'https://1r.example.com/'));

/** Every property some shape constrains: what generated variants add. */
const CONSTRAINED = [
  ...new Set(
    new Parser()
      .parse(readFileSync(SHAPES_FILE, 'utf8'))
      .filter((q) => q.predicate.value === 'http://www.w3.org/ns/shacl#path' && q.object.termType === 'NamedNode')
      .map((q) => q.object.value),
  ),
].sort();

const x = (local: string) => namedNode(`${XSD}${local}`);
const LITERALS: Term[] = [
  literal('abc'),
  literal('Books', 'en'),
  literal('AB12'),
  literal('ab-12'),
  literal('ABCDEFGHIJ'),
  literal('12', x('integer')),
  literal('0', x('integer')),
  literal('-3', x('integer')),
  literal('7', x('positiveInteger')),
  literal('1.5', x('double')),
  literal('2.50', x('decimal')),
  literal('abc', x('double')),
  literal('true', x('boolean')),
  literal('yes', x('boolean')),
  literal('2023-04-01T10:38:01Z', x('dateTime')),
  literal('2023-13-01T00:00:00Z', x('dateTime')),
  literal('2023-04-01', x('date')),
  literal('P1DT2H', x('duration')),
  literal('https://example.com/x', x('anyURI')),
];
const IRIS: Term[] = [
  namedNode(`${CARGO}ACTUAL`),
  namedNode(`${CARGO}BULK`),
  namedNode(`${API}REQUEST_ACCEPTED`),
  namedNode(`${API}ADD`),
  namedNode(`${CODE_LISTS}MeasurementUnitCode#KGM`),
  namedNode('https://1r.example.com/logistics-objects/other'),
];
const CLASSES = [
  'Value',
  'Shipment',
  'Piece',
  'Company',
  'Location',
  'CodeListElement',
  'EventTimeType',
  'LogisticsEvent',
  'StatusUpdateEvent',
]
  .map((c) => `${CARGO}${c}`)
  .concat([`${API}Change`, `${API}Operation`, 'https://example.com/vocab#Other']);

type Mutation = (quads: Quad[]) => Quad[];
const subjects = (quads: Quad[]) => [...new Map(quads.map((q) => [q.subject.value, q.subject])).values()];
let fresh = 0;

/** A value for a mutated triple: a literal, an IRI, or a new node with a type (and its type triple). */
const value = fc.oneof(
  fc.constantFrom(...LITERALS).map((v) => ({ v, extra: [] as Quad[] })),
  fc.constantFrom(...IRIS).map((v) => ({ v, extra: [] as Quad[] })),
  fc.constantFrom(...CLASSES).map((c) => {
    const node = blankNode(`n${++fresh}`);
    return { v: node as Term, extra: [quad(node, namedNode(rdf.type), namedNode(c))] };
  }),
);

const mutation = (strict: boolean): fc.Arbitrary<Mutation> =>
  fc.oneof(
    fc.tuple(fc.nat(), value).map(
      ([i, { v, extra }]): Mutation =>
        (qs) => {
          const k = i % qs.length;
          return [
            ...qs.slice(0, k),
            quad(qs[k].subject, qs[k].predicate, v as Quad['object']),
            ...qs.slice(k + 1),
            ...extra,
          ];
        },
    ),
    fc.tuple(fc.nat(), value).map(
      ([i, { v, extra }]): Mutation =>
        (qs) => [...qs, quad(qs[i % qs.length].subject, qs[i % qs.length].predicate, v as Quad['object']), ...extra],
    ),
    fc
      .tuple(fc.nat(), fc.constantFrom(...CONSTRAINED, ...(strict ? ['https://example.com/vocab#unknown'] : [])), value)
      .map(
        ([i, p, { v, extra }]): Mutation =>
          (qs) => {
            const s = subjects(qs);
            return [...qs, quad(s[i % s.length], namedNode(p), v as Quad['object']), ...extra];
          },
      ),
    fc.tuple(fc.nat(), fc.constantFrom(...CLASSES)).map(
      ([i, c]): Mutation =>
        (qs) => {
          const s = subjects(qs);
          return [...qs, quad(s[i % s.length], namedNode(`${RDF}type`), namedNode(c))];
        },
    ),
    fc.nat().map(
      (i): Mutation =>
        (qs) =>
          qs.filter((_, k) => k !== i % qs.length),
    ),
  );

describe('Compiled shape checks against the SHACL engine (shacl-engine)', () => {
  const compiled = ShapeValidator.fromFiles();
  const reference = new ReferenceValidator();

  for (const name of EXAMPLE_NAMES) {
    it(`give the same verdict, focus nodes and paths on ${name}`, async () => {
      const quads = examples.get(name)!;
      expect(verdictOf(compiled.validate(quads))).to.deep.equal(await reference.verdict(quads));
    });
  }

  const variants = (strict: boolean, runs: number) => async () => {
    const mine = strict ? ShapeValidator.fromFiles({ strict }) : compiled;
    const ref = strict ? new ReferenceValidator({ strict }) : reference;
    let invalid = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...EXAMPLE_NAMES),
        fc.array(mutation(strict), { minLength: 0, maxLength: 3 }),
        async (name, mutations) => {
          const quads = mutations.reduce((qs, m) => (qs.length === 0 ? qs : m(qs)), examples.get(name)!);
          const expected = await ref.verdict(quads);
          if (!expected.conforms) invalid++;
          expect(verdictOf(mine.validate(quads))).to.deep.equal(expected);
        },
      ),
      { numRuns: runs, verbose: 1 },
    );
    // The variants must exercise both answers, or the comparison proves little.
    expect(invalid).to.be.greaterThan(runs / 5);
    expect(invalid).to.be.lessThan(runs);
  };
  it(
    'give the same verdicts, focus nodes and paths on 300 generated variants of the examples',
    variants(false, Number(process.env.SHAPE_RUNS ?? 300)),
  ).timeout(120_000);
  it(
    'give the same verdicts in strict mode on 100 generated variants (unknown properties refused)',
    variants(true, 100),
  ).timeout(120_000);
});

describe('Compiled shape checks on variants the generator might not hit', () => {
  const compiled = ShapeValidator.fromFiles();
  const reference = new ReferenceValidator();
  it('count a triple given twice once, as a graph does', async () => {
    const quads = examples.get('Piece.json')!;
    const twice = [...quads, quads.find((q) => q.predicate.value === `${CARGO}coload`)!];
    expect(compiled.validate(twice)).to.deep.equal([]);
    expect((await reference.verdict(twice)).conforms).to.equal(true);
  });
});
