import { expect } from 'chai';
import fc from 'fast-check';
import { DEFAULTS } from '../src/config.js';
import { splitIntoObjects } from '../src/domain/objects/new-objects.js';
import { writeJsonLd, type NodeDocument } from '../src/rdf/jsonld-writer.js';
import { CargoOntology } from '../src/rdf/ontology.js';
import { parseBody } from '../src/rdf/parse.js';
import { literal, namedNode, quad, xsdLiteral, type Quad } from '../src/rdf/terms.js';
import { API, CARGO, XSD, api, rdf, xsd } from '../src/rdf/vocab.js';
import { ONTOLOGY_FILE } from '../src/server/domain.js';
import { KNOWN_DEFECTS, logisticsObjectExamples, readExample, rebase } from './support/examples.js';
import {
  blankNodesAsInternalIds,
  doubleValuesAsJsonLdReadsThem,
  jsonLdToQuads,
  ntLines,
  withoutServerManaged,
} from './support/rdf-compare.js';

const ontology = CargoOntology.fromFile(ONTOLOGY_FILE);
const examples = await logisticsObjectExamples(ontology);
const EXAMPLE_OBJECTS = 'https://1r.example.com/logistics-objects/';
const ROOT = 'https://example.org/logistics-objects/root';

const iri = namedNode;
const triple = (s: string, p: string, o: Quad['object']) => quad(iri(s), iri(p), o);
const typed = (value: string, datatype: string) => literal(value, iri(datatype));

/** The triples jsonld.js reads from our output must be exactly the document's, plus the revision numbers. */
async function expectRoundTrip(doc: NodeDocument): Promise<string> {
  const written = writeJsonLd(doc);
  const read = await jsonLdToQuads(JSON.parse(written));
  const expected = doubleValuesAsJsonLdReadsThem(doc.triples);
  if (doc.revision) {
    expected.push(triple(doc.iri, api.hasRevision, xsdLiteral(doc.revision.number, xsd.integer)));
    expected.push(triple(doc.iri, api.hasLatestRevision, xsdLiteral(doc.revision.latest, xsd.integer)));
  }
  expect(ntLines(read)).to.deep.equal(ntLines(expected));
  return written;
}

/** The one subject nothing else points at. */
function rootOf(quads: Quad[]): string {
  const objects = new Set(quads.map((q) => q.object.value));
  const roots = [...new Set(quads.map((q) => q.subject.value))].filter((s) => !objects.has(s));
  expect(roots).to.have.length(1);
  return roots[0];
}

describe('JSON-LD writer: jsonld.js reads our output back to exactly the same triples', () => {
  it('finds the Logistics Object examples among the official payloads', () => {
    expect(examples).to.include.members([
      'Company.json',
      'Piece.json',
      'Sensor.expanded.json',
      'Shipment_with_Piece.json',
    ]);
    expect(examples).to.not.include('LogisticsEvent.json');
  });

  describe('official examples that are Logistics Objects (defective ones as corrected in test/support/examples.ts)', () => {
    for (const name of examples) {
      it(name, async () => {
        const text = rebase(KNOWN_DEFECTS[name]?.correct(readExample(name)) ?? readExample(name), EXAMPLE_OBJECTS);
        const parsed = await parseBody(Buffer.from(text), 'jsonld', { base: EXAMPLE_OBJECTS, limits: DEFAULTS.limits });
        // The whole example as one document, blank nodes named as the server names them.
        const all = withoutServerManaged(blankNodesAsInternalIds(parsed));
        await expectRoundTrip({ iri: rootOf(all), triples: all, revision: { number: 1, latest: 3 } });
        // Each object the server would create from it.
        const objects = splitIntoObjects(parsed, { ontology, objectsPrefix: EXAMPLE_OBJECTS, exists: () => false });
        for (const o of objects)
          await expectRoundTrip({ iri: o.iri, triples: o.triples, revision: { number: 1, latest: 1 } });
      });
    }
  });

  it('writes every literal kind, nested and shared embedded nodes, several types, cycles and unreachable nodes', async () => {
    const a = 'internal:a';
    const b = 'internal:b';
    const shared = 'internal:shared';
    const orphan = 'internal:orphan';
    const triples = [
      triple(ROOT, rdf.type, iri(`${CARGO}Company`)),
      triple(ROOT, rdf.type, iri(`${CARGO}Organization`)),
      triple(ROOT, rdf.type, iri('https://example.org/types#Custom')),
      triple(ROOT, `${CARGO}name`, literal('Acme "Cargo"\n\\ Ünïcødé 🚚')),
      triple(ROOT, `${CARGO}shortName`, literal('')),
      triple(ROOT, `${CARGO}goodsDescription`, literal('Bücher', 'de')),
      triple(ROOT, `${CARGO}goodsDescription`, literal('books', 'en-us')),
      triple(ROOT, `${CARGO}coload`, typed('true', xsd.boolean)),
      triple(ROOT, `${CARGO}fragile`, typed('false', xsd.boolean)),
      triple(ROOT, `${CARGO}oddBoolean`, typed('1', xsd.boolean)),
      triple(ROOT, `${CARGO}count`, typed('42', xsd.integer)),
      triple(ROOT, `${CARGO}count`, typed('-7', xsd.integer)),
      triple(ROOT, `${CARGO}count`, typed('0', xsd.integer)),
      triple(ROOT, `${CARGO}count`, typed('-0', xsd.integer)),
      triple(ROOT, `${CARGO}count`, typed('007', xsd.integer)),
      triple(ROOT, `${CARGO}count`, typed('123456789012345678901234567890', xsd.integer)),
      triple(ROOT, `${CARGO}count`, typed('not a number', xsd.integer)),
      triple(ROOT, `${CARGO}positive`, typed('5', xsd.positiveInteger)),
      triple(ROOT, `${CARGO}weight`, typed('20.0', xsd.double)),
      triple(ROOT, `${CARGO}weight`, typed('1.5E3', xsd.double)),
      triple(ROOT, `${CARGO}weight`, typed('NaN', xsd.double)),
      triple(ROOT, `${CARGO}price`, typed('10.50', xsd.decimal)),
      triple(ROOT, `${CARGO}since`, typed('2024-02-29T12:00:00.123+01:00', xsd.dateTime)),
      triple(ROOT, `${CARGO}day`, typed('2024-02-29', `${XSD}date`)),
      triple(ROOT, `${CARGO}homepage`, typed('https://acme.example', xsd.anyURI)),
      triple(ROOT, `${CARGO}code`, typed('X1', 'https://example.org/datatypes#code')),
      triple(ROOT, 'https://example.org/vocab#not-compactable/path', literal('plain')),
      triple(ROOT, `${API}hasDescription`, literal('from the api vocabulary')),
      triple(ROOT, rdf.type, literal('a type written as a literal')),
      triple(ROOT, `${CARGO}contactPersons`, iri('https://partner.example/logistics-objects/person-1')),
      triple(ROOT, `${CARGO}self`, iri(ROOT)),
      triple(ROOT, `${CARGO}first`, iri(a)),
      triple(a, rdf.type, iri(`${CARGO}Value`)),
      triple(a, `${CARGO}unit`, literal('KGM')),
      triple(a, `${CARGO}next`, iri(b)),
      triple(b, `${CARGO}back`, iri(a)),
      triple(b, `${CARGO}toRoot`, iri(ROOT)),
      triple(a, `${CARGO}uses`, iri(shared)),
      triple(b, `${CARGO}uses`, iri(shared)),
      triple(shared, `${CARGO}numericalValue`, typed('3.0', xsd.double)),
      triple(orphan, `${CARGO}name`, literal('reachable from nothing')),
    ];
    await expectRoundTrip({ iri: ROOT, triples, revision: { number: 2, latest: 5 } });
  });

  it('stays linear in size when embedded nodes share children (no copy per path)', async () => {
    // 24 diamonds in a row: writing each node once per path would be 2^24 copies.
    const triples: Quad[] = [triple(ROOT, `${CARGO}first`, iri('internal:d0'))];
    for (let i = 0; i < 24; i++) {
      for (const side of ['l', 'r']) {
        triples.push(triple(`internal:d${i}`, `${CARGO}branch`, iri(`internal:d${i}${side}`)));
        triples.push(triple(`internal:d${i}${side}`, `${CARGO}next`, iri(`internal:d${i + 1}`)));
      }
    }
    const written = await expectRoundTrip({ iri: ROOT, triples });
    expect(written.length).to.be.below(200 * triples.length);
  });

  it('inlines a linked object once however often it is linked (embedded=true)', async () => {
    const linked = 'https://example.org/logistics-objects/linked';
    const root: NodeDocument = {
      iri: ROOT,
      triples: [triple(ROOT, `${CARGO}pieces`, iri(linked)), triple(ROOT, `${CARGO}mainPiece`, iri(linked))],
      revision: { number: 1, latest: 1 },
    };
    const inlined: NodeDocument = {
      iri: linked,
      triples: [
        triple(linked, rdf.type, iri(`${CARGO}Piece`)),
        triple(linked, `${CARGO}goodsDescription`, literal('inlined')),
      ],
      revision: { number: 3, latest: 4 },
    };
    const written = writeJsonLd(root, { inline: new Map([[linked, inlined]]) });
    expect(written.split('"inlined"')).to.have.length(2);
    const read = await jsonLdToQuads(JSON.parse(written));
    const revisions = (d: NodeDocument) => [
      triple(d.iri, api.hasRevision, xsdLiteral(d.revision!.number, xsd.integer)),
      triple(d.iri, api.hasLatestRevision, xsdLiteral(d.revision!.latest, xsd.integer)),
    ];
    expect(ntLines(read)).to.deep.equal(
      ntLines([...root.triples, ...inlined.triples, ...revisions(root), ...revisions(inlined)]),
    );
  });

  it('adds ?at= to linked objects through linkIri but never to the object itself', () => {
    const linked = 'https://example.org/logistics-objects/linked';
    const written = JSON.parse(
      writeJsonLd(
        { iri: ROOT, triples: [triple(ROOT, `${CARGO}pieces`, iri(linked)), triple(ROOT, `${CARGO}self`, iri(ROOT))] },
        { linkIri: (i) => `${i}?at=20240101T000000Z` },
      ),
    ) as Record<string, { '@id': string }>;
    expect(written['@id']).to.equal(ROOT);
    expect(written['cargo:pieces']['@id']).to.equal(`${linked}?at=20240101T000000Z`);
  });

  describe('random graphs (fast-check)', () => {
    // Language tags are lower case: the store keeps them so, and jsonld.js lower-cases what it reads.
    // IRIs whose scheme is one of our prefixes (cargo:x) never reach the writer: the parser refuses them.
    const subjects = [ROOT, 'internal:e1', 'internal:e2', 'internal:e3', 'https://example.org/logistics-objects/other'];
    const objectIris = [
      ...subjects,
      `${CARGO}Piece`,
      `${CARGO}Value`,
      'https://onerecord.iata.org/ns/code-lists/SpecialHandlingCode#VAL',
      'urn:uuid:6f1c2c1e-0000-4000-8000-000000000000',
      'http://example.org/a%20b?x=1#f',
    ];
    const predicates = [
      `${CARGO}goodsDescription`,
      `${CARGO}pieces`,
      `${CARGO}a/b`,
      `${API}hasDescription`,
      `${XSD}usedAsProperty`,
      'http://example.org/p',
      rdf.type,
    ];
    const datatypes = [
      xsd.string,
      xsd.integer,
      xsd.boolean,
      xsd.double,
      xsd.dateTime,
      xsd.anyURI,
      `${CARGO}Code`,
      'https://example.org/dt',
    ];
    const literalArb: fc.Arbitrary<Quad['object']> = fc.oneof(
      fc.string({ unit: 'binary' }).map((s) => literal(s)),
      fc.tuple(fc.string(), fc.constantFrom('en', 'en-us', 'de-de', 'zh-hant-tw')).map(([v, l]) => literal(v, l)),
      fc.boolean().map((b) => xsdLiteral(b, xsd.boolean)),
      fc.bigInt().map((n) => xsdLiteral(n.toString(), xsd.integer)),
      fc.double().map((d) => xsdLiteral(String(d), xsd.double)),
      fc.date({ noInvalidDate: true }).map((d) => xsdLiteral(d.toISOString(), xsd.dateTime)),
      fc.tuple(fc.string(), fc.constantFrom(...datatypes)).map(([v, dt]) => typed(v, dt)),
    );
    const objectArb = fc.oneof(
      fc.constantFrom(...objectIris).map((o) => iri(o) as Quad['object']),
      literalArb,
    );
    const tripleArb = fc
      .tuple(fc.constantFrom(...subjects), fc.constantFrom(...predicates), objectArb)
      .map(([s, p, o]) => triple(s, p, o));
    const graphArb = fc.uniqueArray(tripleArb, { maxLength: 40, selector: (t) => ntLines([t])[0] });

    it('round-trips any graph of literals, links, embedded nodes and cycles', async () => {
      await fc.assert(
        fc.asyncProperty(
          graphArb,
          fc.option(fc.record({ number: fc.integer({ min: 1, max: 1e6 }), latest: fc.integer({ min: 1, max: 1e6 }) }), {
            nil: undefined,
          }),
          async (triples, revision) => {
            await expectRoundTrip({ iri: ROOT, triples, revision });
          },
        ),
        { numRuns: 300 },
      );
    });
  });
});
