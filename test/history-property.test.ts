import { expect } from 'chai';
import fc from 'fast-check';
import { Parser } from 'n3';
import type { Quad } from '../src/rdf/terms.js';
import { startTestServer, type TestServer } from './support/server.js';
import {
  API,
  CARGO,
  XSD,
  add,
  change,
  createObject,
  dbl,
  del,
  readJson,
  revisionsOf,
  statusOf,
  str,
  submit,
  type Op,
  type Value,
} from './support/changes.js';

/**
 * The model: a plain set of triples, keyed by value (a double is its number, whatever its
 * lexical form), with the same rules as the spec: DELETEs then ADDs, all or nothing, an ADD
 * only on the object or its embedded nodes, and embedded nodes no longer linked dropped.
 */
interface Triple {
  s: string;
  p: string;
  o: string;
}
type Model = Triple[];

const TYPE = 'http://www.w3.org/1999/02/22-rdf-syntax-ns#type';
const GOODS = `${CARGO}goodsDescription`;
const WEIGHT = `${CARGO}grossWeight`;
const NUMBER = `${CARGO}numericalValue`;
const UNIT = `${CARGO}unit`;
const NEW_NODE = '_:w';

const keyOf = (t: Triple) => `${t.s} ${t.p} ${t.o}`;
const LITERAL_KINDS: Record<string, string> = {
  [`${XSD}double`]: 'double',
  [`${XSD}boolean`]: 'boolean',
  [`${XSD}string`]: 'string',
};

function literalKey(datatype: string, value: string): string | undefined {
  const kind = LITERAL_KINDS[datatype];
  return kind && `${kind}:${kind === 'double' ? Number(value) : value}`;
}

const valueKey = (v: Value) => literalKey(v.datatype, v.value) ?? `<${v.value}>`;

const termKey = (t: Quad['object']) =>
  t.termType === 'Literal' ? literalKey(t.datatype.value, t.value)! : `<${t.value}>`;

/** Applies operations to the model; undefined when the server must refuse them (REQUEST_FAILED). */
function applyToModel(model: Model, object: string, operations: Op[]): Model | undefined {
  const triples = new Map(model.map((t) => [keyOf(t), t]));
  const asTriples = (o: Op) =>
    o.o.map((v): Triple => ({ s: o.s, p: o.p, o: v.value === NEW_NODE ? `<${NEW_NODE}>` : valueKey(v) }));
  for (const t of operations.filter((o) => o.op === 'DELETE').flatMap(asTriples))
    if (!triples.delete(keyOf(t))) return undefined;
  for (const o of operations.filter((x) => x.op === 'ADD')) {
    for (const t of asTriples(o)) {
      if (triples.has(keyOf(t))) return undefined;
      triples.set(keyOf(t), t);
      if (t.o === `<${NEW_NODE}>`)
        triples.set(`${NEW_NODE} ${TYPE} <${CARGO}Value>`, { s: NEW_NODE, p: TYPE, o: `<${CARGO}Value>` });
    }
  }
  const reachable = new Set([object]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const t of triples.values()) {
      const target = t.o.slice(1, -1);
      if (
        reachable.has(t.s) &&
        t.o.startsWith('<') &&
        (target.startsWith('internal:') || target === NEW_NODE) &&
        !reachable.has(target)
      ) {
        reachable.add(target);
        grew = true;
      }
    }
  }
  if (operations.some((o) => o.op === 'ADD' && !reachable.has(o.s))) return undefined;
  return [...triples.values()].filter((t) => reachable.has(t.s));
}

/** One random change, read against the model when it runs. */
interface Step {
  deletes: number[];
  goods: string[];
  numbers: { n: number; form: number }[];
  embed: 'none' | 'create' | 'unlink';
  impossibleDelete: boolean;
}

const stepArbitrary: fc.Arbitrary<Step> = fc.record({
  deletes: fc.array(fc.nat(), { maxLength: 3 }),
  goods: fc.array(fc.constantFrom('Books', 'Pens', 'Cups'), { maxLength: 2 }),
  numbers: fc.array(fc.record({ n: fc.integer({ min: 0, max: 4 }), form: fc.nat(3) }), { maxLength: 2 }),
  embed: fc.constantFrom('none', 'none', 'create', 'unlink'),
  impossibleDelete: fc.integer({ min: 0, max: 9 }).map((n) => n < 2),
});

/** The same number in four lexical forms: the server must treat them as one value. */
const doubleForm = (n: number, form: number) => dbl([`${n}.0`, `${n}E0`, `${n * 10}E-1`, `${n}`][form]);

function operationsFor(step: Step, model: Model, object: string): Op[] {
  const operations: Op[] = [];
  const deletable = model.filter((t) => !(t.s === object && t.p === TYPE));
  const toValue = (t: Triple): Value => {
    if (t.o.startsWith('<')) return { datatype: `${CARGO}Value`, value: t.o.slice(1, -1) };
    const kind = t.o.slice(0, t.o.indexOf(':'));
    return { datatype: `${XSD}${kind}`, value: t.o.slice(kind.length + 1) };
  };
  for (const i of new Set(step.deletes.map((d) => (deletable.length ? d % deletable.length : -1)))) {
    if (i >= 0) operations.push(del(deletable[i].s, deletable[i].p, toValue(deletable[i])));
  }
  for (const g of step.goods) operations.push(add(object, GOODS, str(g)));
  const weight = model.find((t) => t.s === object && t.p === WEIGHT);
  for (const { n, form } of step.numbers)
    if (weight) operations.push(add(weight.o.slice(1, -1), NUMBER, doubleForm(n, form)));
  if (step.embed === 'create')
    operations.push(
      add(object, WEIGHT, { datatype: `${CARGO}Value`, value: NEW_NODE }),
      add(NEW_NODE, UNIT, str('KGM')),
    );
  if (step.embed === 'unlink' && weight)
    operations.push(del(object, WEIGHT, { datatype: `${CARGO}Value`, value: weight.o.slice(1, -1) }));
  if (step.impossibleDelete) operations.push(del(object, GOODS, str('never there')));
  if (operations.length === 0) operations.push(add(object, GOODS, str('Fallback')));
  return operations;
}

async function serverTriples(
  server: TestServer,
  object: string,
  query: string,
): Promise<{ revision: number; keys: string[] }> {
  const res = await server.request(`${object}${query}`, { headers: { Accept: 'application/n-triples' } });
  expect(res.status, query).to.equal(200);
  const quads = new Parser({ format: 'application/n-triples' }).parse(await res.text());
  const keys = quads
    .filter((q) => !q.predicate.value.startsWith(API))
    .map((q) => keyOf({ s: q.subject.value, p: q.predicate.value, o: termKey(q.object) }));
  return { revision: Number(res.headers.get('revision')), keys: keys.sort() };
}

const modelKeys = (model: Model) => model.map(keyOf).sort();

describe('history: every revision is exactly the state after its change (fast-check)', () => {
  let server: TestServer;
  before(async () => {
    // The model adds values freely (several descriptions, weights, numerical values): it checks how
    // revisions are kept, not the data model, which test/shapes-*.test.ts cover.
    server = await startTestServer({
      decisionPolicy: 'auto',
      journal: { fsync: false },
      validation: { enabled: false },
    });
  });
  after(() => server.close());

  it('?revision=k and ?at= any instant of revision k return the model after k-1 accepted changes', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(stepArbitrary, { minLength: 1, maxLength: 7 }), async (steps) => {
        const object = await createObject(server);
        let model: Model = (await serverTriples(server, object, '?revision=1')).keys.map((k) => {
          const [s, p, ...o] = k.split(' ');
          return { s, p, o: o.join(' ') };
        });
        expect(model.some((t) => t.p === WEIGHT)).to.equal(true);
        const snapshots: Model[] = [model];
        for (const step of steps) {
          const operations = operationsFor(step, model, object);
          const expected = applyToModel(model, object, operations);
          const request = await submit(server, object, change(object, snapshots.length, operations));
          expect(await statusOf(server, request), JSON.stringify(operations)).to.equal(
            expected ? 'REQUEST_ACCEPTED' : 'REQUEST_FAILED',
          );
          if (!expected) continue;
          if (expected.some((t) => t.s === NEW_NODE || t.o === `<${NEW_NODE}>`)) {
            // The server chose the new embedded object's id: learn it from the new revision.
            const known = new Set(model.map((t) => t.o));
            const link = (await serverTriples(server, object, '')).keys.find(
              (k) => k.startsWith(`${object} ${WEIGHT} `) && !known.has(k.split(' ')[2]),
            )!;
            const id = link.split(' ')[2].slice(1, -1);
            const rename = (v: string) => (v === NEW_NODE ? id : v === `<${NEW_NODE}>` ? `<${id}>` : v);
            model = expected.map((t) => ({ s: rename(t.s), p: t.p, o: rename(t.o) }));
          } else {
            model = expected;
          }
          snapshots.push(model);
        }

        const revisions = await revisionsOf(server, object);
        // Revision times are made strictly increasing, so the last may lie a few ms ahead; `at` must not be in the future.
        while (Date.now() <= revisions[revisions.length - 1].createdAt.getTime())
          await new Promise((resolve) => setTimeout(resolve, 2));
        expect(revisions.map((r) => r.number)).to.deep.equal(snapshots.map((_, i) => i + 1));
        for (const [i, snapshot] of snapshots.entries()) {
          const k = i + 1;
          const byNumber = await serverTriples(server, object, `?revision=${k}`);
          expect(byNumber.keys, `revision ${k}`).to.deep.equal(modelKeys(snapshot));
          const start = revisions[i].createdAt.getTime();
          const end = i + 1 < revisions.length ? revisions[i + 1].createdAt.getTime() - 1 : start;
          for (const instant of new Set([start, Math.floor((start + end) / 2), end])) {
            const byTime = await serverTriples(
              server,
              object,
              `?at=${encodeURIComponent(new Date(instant).toISOString())}`,
            );
            expect(byTime.revision, `at ${instant} (revision ${k})`).to.equal(k);
            expect(byTime.keys).to.deep.equal(byNumber.keys);
          }
        }
        expect((await readJson(server, `${object}/audit-trail`))['api:hasLatestRevision']).to.deep.equal({
          '@value': String(snapshots.length),
          '@type': 'xsd:positiveInteger',
        });
      }),
      { numRuns: 25 },
    );
  });
});
