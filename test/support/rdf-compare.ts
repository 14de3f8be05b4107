import jsonld from 'jsonld';
import {
  blankNode,
  defaultGraph,
  literal,
  namedNode,
  quad,
  termToNt,
  type Quad,
  type Term,
} from '../../src/rdf/terms.js';
import { SERVER_MANAGED } from '../../src/domain/objects/new-objects.js';
import { xsd } from '../../src/rdf/vocab.js';

interface JsonLdTerm {
  termType: string;
  value: string;
  datatype?: { value: string };
  language?: string;
}

export const refuseRemote = (url: string): never => {
  throw new Error(`test documents never load remote documents (${url})`);
};

function fromJsonLd(t: JsonLdTerm): Term {
  if (t.termType === 'NamedNode') return namedNode(t.value);
  if (t.termType === 'BlankNode') return blankNode(t.value.replace(/^_:/, ''));
  if (t.termType === 'Literal')
    return t.language ? literal(t.value, t.language) : literal(t.value, namedNode(t.datatype!.value));
  return defaultGraph();
}

/** The triples jsonld.js (the reference processor) reads from a JSON-LD document. */
export async function jsonLdToQuads(document: unknown, base?: string): Promise<Quad[]> {
  const raw = (await jsonld.toRDF(
    document as jsonld.JsonLdDocument,
    { base, documentLoader: refuseRemote } as jsonld.Options.ToRdf,
  )) as unknown as {
    subject: JsonLdTerm;
    predicate: JsonLdTerm;
    object: JsonLdTerm;
  }[];
  return raw.map((q) =>
    quad(
      fromJsonLd(q.subject) as Quad['subject'],
      fromJsonLd(q.predicate) as Quad['predicate'],
      fromJsonLd(q.object) as Quad['object'],
    ),
  );
}

const termNt = (t: Term) => (t.termType === 'BlankNode' ? `_:${t.value}` : termToNt(t));

/** Sorted, de-duplicated N-Triples lines (blank nodes written with their labels). */
export function ntLines(quads: readonly Quad[]): string[] {
  return [...new Set(quads.map((q) => `${termNt(q.subject)} ${termNt(q.predicate)} ${termNt(q.object)} .`))].sort();
}

/** Canonical N-Quads (RDFC-1.0 / URDNA2015): equal for two graphs exactly when they are isomorphic. */
export function canonicalForm(quads: readonly Quad[]): Promise<string> {
  const nquads = `${ntLines(quads).join('\n')}\n`;
  return jsonld.canonize(nquads as unknown as jsonld.JsonLdDocument, {
    algorithm: 'URDNA2015',
    inputFormat: 'application/n-quads',
    format: 'application/n-quads',
  });
}

/** Replaces the IRIs `isLocal` picks (server-minted ids) by blank nodes, one per IRI. */
export function localIdsAsBlankNodes(quads: readonly Quad[], isLocal: (iri: string) => boolean): Quad[] {
  const labels = new Map<string, string>();
  const map = (t: Term): Term => {
    if (t.termType !== 'NamedNode' || !isLocal(t.value)) return t;
    let label = labels.get(t.value);
    if (!label) {
      label = `local${labels.size}`;
      labels.set(t.value, label);
    }
    return blankNode(label);
  };
  return quads.map((q) => quad(map(q.subject) as Quad['subject'], q.predicate, map(q.object) as Quad['object']));
}

/** Replaces blank nodes by `internal:` IRIs, as the server does before storing anything. */
export function blankNodesAsInternalIds(quads: readonly Quad[]): Quad[] {
  const map = (t: Term): Term => (t.termType === 'BlankNode' ? namedNode(`internal:${t.value}`) : t);
  return quads.map((q) => quad(map(q.subject) as Quad['subject'], q.predicate, map(q.object) as Quad['object']));
}

/** Without the api:hasRevision / api:hasLatestRevision triples the server manages itself. */
export function withoutServerManaged(quads: readonly Quad[]): Quad[] {
  return quads.filter((q) => !SERVER_MANAGED.has(q.predicate.value));
}

/**
 * jsonld.js writes every xsd:double in its canonical form ("20.0" reads as "2.0E1"), whatever
 * the lexical form in the document, so doubles can only be compared by value. (It also reads
 * the XSD lexical forms INF and -INF as NaN: no JSON-LD document can carry them past it.)
 */
export function doubleValuesAsJsonLdReadsThem(quads: readonly Quad[]): Quad[] {
  return quads.map((q) => {
    if (q.object.termType !== 'Literal' || q.object.datatype.value !== xsd.double) return q;
    const canonical = parseFloat(q.object.value)
      .toExponential(15)
      .replace(/(\d)0*e\+?/, '$1E');
    return quad(q.subject, q.predicate, literal(canonical, q.object.datatype));
  });
}
