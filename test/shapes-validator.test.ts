import { expect } from 'chai';
import { Parser } from 'n3';
import type { Quad } from '../src/rdf/terms.js';
import { rdfTermKey } from '../src/rdf/triples.js';
import { CARGO } from '../src/rdf/vocab.js';
import fc from 'fast-check';
import { changeFocus, ShapeValidator, type Violation } from '../src/shapes/validator.js';
import { ReferenceValidator } from './support/shacl-reference.js';

const PREFIXES = `@prefix cargo: <${CARGO}> . @prefix api: <https://onerecord.iata.org/ns/api#> . @prefix xsd: <http://www.w3.org/2001/XMLSchema#> . @prefix o: <https://1r.example.com/logistics-objects/> . @prefix i: <internal:> .\n`;
const triples = (turtle: string): Quad[] => new Parser().parse(PREFIXES + turtle);

describe('Shape checks: one violating variant per kind of shape', () => {
  const validator = ShapeValidator.fromFiles();
  const strict = ShapeValidator.fromFiles({ strict: true });
  const reference = new ReferenceValidator();

  /** The violations of the compiled checks, after checking that the SHACL engine finds the same ones. */
  async function violations(turtle: string, v = validator) {
    const data = triples(turtle);
    const found = v.validate(data);
    if (v === validator) {
      const expected = await reference.verdict(data);
      expect([...new Set(found.map((f) => `${f.focusNode} ${f.path}`))].sort()).to.deep.equal(expected.failures);
    }
    return found.map((f) => ({ focusNode: f.focusNode, path: f.path, message: f.message }));
  }

  it('accepts a valid Piece with an embedded Value and a code-list unit', async () => {
    expect(
      await violations(`o:p a cargo:Piece ; cargo:goodsDescription "Books" ; cargo:grossWeight i:w .
      i:w a cargo:Value ; cargo:numericalValue 20 ; cargo:unit <https://onerecord.iata.org/ns/code-lists/MeasurementUnitCode#KGM> .`),
    ).to.deep.equal([]);
  });

  it('datatype: a numericalValue that is not a number', async () => {
    expect(
      await violations(`o:p a cargo:Piece ; cargo:grossWeight i:w . i:w a cargo:Value ; cargo:numericalValue "abc" .`),
    ).to.deep.equal([
      {
        focusNode: 'internal:w',
        path: `${CARGO}numericalValue`,
        message: 'cargo:grossWeight/cargo:numericalValue must be a number, got "abc"',
      },
    ]);
  });

  it('datatype: an ill-typed literal ("abc"^^xsd:double) and a dateTime out of range', async () => {
    const found =
      await violations(`o:e a cargo:LogisticsEvent ; cargo:eventFor o:p ; cargo:eventDate "2023-13-01T00:00:00Z"^^xsd:dateTime ; cargo:eventLocation i:l .
      i:l a cargo:Location ; cargo:geolocation i:g . i:g cargo:latitude "abc"^^xsd:double .`);
    expect(found.map((f) => f.message)).to.have.members([
      'cargo:eventDate must be an xsd:dateTime, got "2023-13-01T00:00:00Z"',
      'cargo:eventLocation/cargo:geolocation/cargo:latitude must be a number, got "abc"',
    ]);
  });

  it('class: a grossWeight that is a Company, and a literal where a node is expected', async () => {
    const found = await violations(
      `o:p a cargo:Piece ; cargo:grossWeight i:c ; cargo:dimensions "big" . i:c a cargo:Company .`,
    );
    expect(found.map((f) => f.message)).to.have.members([
      'cargo:grossWeight must be a node of class cargo:Value, or a link, got <internal:c>',
      'cargo:dimensions must be a node of class cargo:Dimensions, or a link, got "big"',
    ]);
  });

  it('class: a link whose type the data does not say is accepted (open world)', async () => {
    expect(await violations(`o:p a cargo:Piece ; cargo:containedItems o:other .`)).to.deep.equal([]);
  });

  it('cardinality: a Piece with two goodsDescriptions where one is allowed', async () => {
    expect(await violations(`o:p a cargo:Piece ; cargo:goodsDescription "Books", "Magazines" .`)).to.deep.equal([
      {
        focusNode: 'https://1r.example.com/logistics-objects/p',
        path: `${CARGO}goodsDescription`,
        message: 'cargo:goodsDescription may appear at most once, got 2 values',
      },
    ]);
  });

  it('cardinality: subclasses inherit the restrictions of their superclasses (PieceDg is a Piece)', async () => {
    expect(
      (await violations(`o:p a cargo:PieceDg ; cargo:goodsDescription "Books", "Magazines" .`)).map((f) => f.path),
    ).to.deep.equal([`${CARGO}goodsDescription`]);
  });

  it('cardinality: an event without eventFor (the one minimum cardinality of the cargo ontology)', async () => {
    expect(
      (await violations(`o:e a cargo:LogisticsEvent ; cargo:eventDate "2023-04-01T10:38:01Z"^^xsd:dateTime .`)).map(
        (f) => f.message,
      ),
    ).to.deep.equal(['cargo:eventFor must appear at least once, got none']);
  });

  it('enumeration: an unknown eventTimeType, and a code given as a string', async () => {
    const found =
      await violations(`o:e a cargo:LogisticsEvent ; cargo:eventFor o:p ; cargo:eventTimeType cargo:SOMETIME .
      o:f a cargo:LogisticsEvent ; cargo:eventFor o:p ; cargo:eventTimeType "ACTUAL" .`);
    expect(found.map((f) => f.message)).to.have.members([
      'cargo:eventTimeType must be one of cargo:ACTUAL, cargo:ESTIMATED, cargo:EXPECTED, cargo:PLANNED, cargo:REQUESTED, got <https://onerecord.iata.org/ns/cargo#SOMETIME>',
      'cargo:eventTimeType must be one of cargo:ACTUAL, cargo:ESTIMATED, cargo:EXPECTED, cargo:PLANNED, cargo:REQUESTED, got "ACTUAL"',
    ]);
  });

  it('code lists: an IRI or a CodeListElement node is accepted, a literal is not', async () => {
    expect(
      await violations(
        `o:p a cargo:Piece ; cargo:grossWeight i:w . i:w cargo:unit i:u . i:u a cargo:CodeListElement ; cargo:code "KGM" .`,
      ),
    ).to.deep.equal([]);
    expect(
      (await violations(`o:p a cargo:Piece ; cargo:grossWeight i:w . i:w cargo:unit "kg" .`)).map((f) => f.message),
    ).to.deep.equal([
      'cargo:grossWeight/cargo:unit must be a node of class cargo:CodeListElement or <https://onerecord.iata.org/ns/code-lists/MeasurementUnitCode>, or a link, got "kg"',
    ]);
  });

  it('facets: the waybillNumber pattern and maxLength are enforced, the "[-9]+" typo is not', async () => {
    expect(
      (await violations(`o:w a cargo:Waybill ; cargo:waybillNumber "ab-1" ; cargo:waybillPrefix "1234" .`)).map((f) =>
        f.path.replace(CARGO, ''),
      ),
    ).to.have.members(['waybillNumber', 'waybillPrefix']);
    expect(await violations(`o:c a cargo:Carrier ; cargo:prefix "ABC" .`)).to.deep.equal([]);
  });

  it('API objects: a Change without notifyRequestStatusChange is valid (spec default false); a second one is not', async () => {
    const change = `[] a api:Change ; api:hasLogisticsObject o:p ; api:hasRevision 1 ; api:hasOperation [ a api:Operation ; api:op api:ADD ; api:s "${'https://1r.example.com/logistics-objects/p'}" ; api:p "${CARGO}goodsDescription"^^xsd:anyURI ; api:o [ a api:OperationObject ; api:hasDatatype "http://www.w3.org/2001/XMLSchema#string"^^xsd:anyURI ; api:hasValue "x" ] ]`;
    expect(await violations(`${change} .`)).to.deep.equal([]);
    expect(
      (await violations(`${change} ; api:notifyRequestStatusChange true, false .`)).map((f) => f.path),
    ).to.deep.equal(['https://onerecord.iata.org/ns/api#notifyRequestStatusChange']);
  });

  it('xsd:anyURI (api:hasTopic, api:p, ...): a typed literal, a string and a link are accepted; a blank node and a number are not', async () => {
    const subscription = (topic: string) =>
      `o:s a api:Subscription ; api:hasSubscriber o:c ; api:hasTopicType api:LOGISTICS_OBJECT_IDENTIFIER ; api:includeSubscriptionEventType api:LOGISTICS_OBJECT_UPDATED ; api:hasTopic ${topic} .`;
    for (const accepted of [
      '"https://1r.example.com/logistics-objects/p"^^xsd:anyURI',
      '"https://1r.example.com/logistics-objects/p"',
      'o:p',
    ]) {
      expect(await violations(subscription(accepted)), accepted).to.deep.equal([]);
    }
    for (const [refused, shown] of [
      ['[ a cargo:Piece ]', 'a blank node'],
      ['42', '"42"'],
    ]) {
      expect(
        (await violations(subscription(refused))).map((f) => f.message),
        refused,
      ).to.deep.equal([`api:hasTopic must be an IRI (an xsd:anyURI, a string or a link), got ${shown}`]);
    }
    const operation = (p: string) =>
      `[] a api:Change ; api:hasLogisticsObject o:p ; api:hasRevision 1 ; api:hasOperation [ a api:Operation ; api:op api:ADD ; api:s "https://1r.example.com/logistics-objects/p" ; api:p ${p} ; api:o [ a api:OperationObject ; api:hasDatatype xsd:string ; api:hasValue "x" ] ] .`;
    expect(await violations(operation(`cargo:goodsDescription`))).to.deep.equal([]);
    expect(await violations(operation(`"${CARGO}goodsDescription"^^xsd:anyURI`))).to.deep.equal([]);
  });

  it('unknown properties are accepted (open world) unless strict mode is on', async () => {
    const data = `o:p a cargo:Piece ; <https://example.com/vocab#colour> "red" .`;
    expect(await violations(data)).to.deep.equal([]);
    expect((await violations(data, strict)).map((f) => f.message)).to.deep.equal([
      '<https://example.com/vocab#colour> is not a property of the ONE Record ontologies (strict mode)',
    ]);
  });
});

describe('Shape checks of a change: only what it touched, the same answer as checking the whole', () => {
  const BASE = `o:p a cargo:Piece ; cargo:goodsDescription "Books" ; cargo:grossWeight i:w ; cargo:dimensions i:d .
    i:w a cargo:Value ; cargo:numericalValue 20 ; cargo:unit <https://onerecord.iata.org/ns/code-lists/MeasurementUnitCode#KGM> .
    i:d a cargo:Dimensions ; cargo:height i:h . i:h a cargo:Value ; cargo:numericalValue 40 .`;
  /** Triples a change may add: some keep the data conforming, others break a shape of each kind (datatype, count, class, closed). */
  const CANDIDATES = `o:p cargo:goodsDescription "Magazines" ; cargo:upid "U1" ; cargo:grossWeight i:c ; cargo:slac "abc" ; cargo:madeUp "x" .
    i:w a cargo:Company ; cargo:numericalValue "heavy" ; cargo:numericalValue 21 .
    i:d a cargo:Value . i:h cargo:numericalValue 41 . i:c a cargo:Value ; cargo:numericalValue 1 .`;
  const key = (t: Quad) => `${t.subject.value} ${t.predicate.value} ${t.object.value}`;
  const verdict = (found: Violation[]) => found.map((v) => `${v.focusNode} ${v.path} ${v.message}`).sort();
  /** The triples by subject IRI, predicate and value, as a change keeps the revision it makes. */
  function byNode(data: readonly Quad[]): Map<string, Map<string, Map<string, Quad>>> {
    const nodes = new Map<string, Map<string, Map<string, Quad>>>();
    for (const t of data) {
      const node = nodes.get(t.subject.value) ?? nodes.set(t.subject.value, new Map()).get(t.subject.value)!;
      const values = node.get(t.predicate.value) ?? node.set(t.predicate.value, new Map()).get(t.predicate.value)!;
      values.set(rdfTermKey(t.object), t);
    }
    return nodes;
  }

  for (const strictness of [false, true]) {
    it(`any change of conforming data: deletions, additions, retyped nodes, with the data scanned or read by node${strictness ? ' (strict shapes)' : ''} (property)`, () => {
      const validator = ShapeValidator.fromFiles({ strict: strictness });
      const base = triples(BASE);
      const candidates = triples(CANDIDATES);
      expect(validator.validate(base)).to.deep.equal([]);
      fc.assert(
        fc.property(fc.subarray(base), fc.subarray(candidates), (removed, added) => {
          const gone = new Set(removed.map(key));
          const next = [...base.filter((t) => !gone.has(key(t))), ...added];
          const whole = verdict(validator.validate(next));
          expect(verdict(validator.validate(next, changeFocus(next, added, removed)))).to.deep.equal(whole);
          expect(verdict(validator.validate(next, changeFocus(next, added, removed), byNode(next)))).to.deep.equal(
            whole,
          );
        }),
        { numRuns: 300 },
      );
    });
  }
});
