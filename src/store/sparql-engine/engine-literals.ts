import { readStoreNTriples } from '../../rdf/ntriples.js';
import { blankNode, literal, namedNode, quad, type Quad, type RDF } from '../../rdf/terms.js';
import { STORE, xsd } from '../../rdf/vocab.js';
import type { SparqlJsonResults } from '../readers.js';

/*
 * Literals as the engine can keep them, and back in the forms the embedded store (Oxigraph)
 * gives, so that both backends answer the same. Virtuoso 7 refuses an xsd:duration in an update
 * ("No column PT2HD") and keeps one made otherwise as seconds, losing "P1M": a duration is written
 * under a datatype of ours, which it keeps verbatim, and read back as xsd:duration. It gives back
 * booleans as 1/0, doubles as "100.0" and fractions of seconds as written (docs/sparql-engine.md).
 */

/** The stand-in datatype of an xsd:duration on the engine. */
const KEPT_DURATION = `${STORE}duration`;

/** N-Quads lines (an export) with their literals as written to the engine: what its bulk loader loads. */
export const toEngineNQuads = (text: string) => text.replaceAll(`^^<${xsd.duration}>`, `^^<${KEPT_DURATION}>`);

/** A literal as written to the engine. */
export function toEngine(l: RDF.Literal): RDF.Literal {
  return l.datatype.value === xsd.duration ? literal(l.value, namedNode(KEPT_DURATION)) : l;
}

/** A literal the engine gave back, in the form the embedded store would give. */
export function fromEngine(value: string, datatype: string | undefined, language: string | undefined): RDF.Literal {
  if (language) return literal(value, language.toLowerCase());
  switch (datatype) {
    case undefined:
      return literal(value);
    case KEPT_DURATION:
      return literal(value, namedNode(xsd.duration));
    case xsd.boolean:
      return literal(value === '1' || value === 'true' ? 'true' : 'false', namedNode(xsd.boolean));
    case xsd.double:
    case xsd.float:
      return literal(canonicalFloat(value), namedNode(datatype));
    case xsd.dateTime:
      return literal(withoutTrailingZeros(value), namedNode(datatype));
    default:
      return literal(value, namedNode(datatype));
  }
}

/** SELECT results with their literals as the embedded store would give them (changed in place). */
export function normalisedResults(answer: SparqlJsonResults): SparqlJsonResults {
  for (const binding of answer.results.bindings) {
    for (const [name, term] of Object.entries(binding)) {
      if (term.type !== 'literal' && term.type !== 'typed-literal') continue;
      const l = fromEngine(term.value, term.datatype, term['xml:lang']);
      binding[name] = {
        type: 'literal',
        value: l.value,
        ...(l.language
          ? { 'xml:lang': l.language }
          : l.datatype.value !== xsd.string
            ? { datatype: l.datatype.value }
            : {}),
      };
    }
  }
  return answer;
}

type Binding = SparqlJsonResults['results']['bindings'][number];

/** A term of SPARQL JSON results as an RDF term, a literal in the embedded store's form. */
export function termOf(b: Binding[string]): RDF.Term {
  if (b.type === 'uri') return namedNode(b.value);
  if (b.type === 'bnode') return blankNode(b.value);
  return fromEngine(b.value, b.datatype, b['xml:lang']);
}

/** The triple a row binds to `?s ?p ?o`. */
export const tripleOfBinding = (b: Binding): Quad =>
  quad(termOf(b.s) as Quad['subject'], termOf(b.p) as Quad['predicate'], termOf(b.o) as Quad['object']);

/**
 * "10:00:00.120Z" -> "10:00:00.12Z", "10:00:00.000Z" -> "10:00:00Z": the fraction of a second as Oxigraph writes it.
 */
const withoutTrailingZeros = (value: string) =>
  value.replace(/(\.\d*?)0+(?=$|[Z+-])/, '$1').replace(/\.(?=$|[Z+-])/, '');

/** The infinities and NaN, however the engine spells them. */
const SPECIAL_FLOATS = new Map([
  ['inf', 'INF'],
  ['+inf', 'INF'],
  ['infinity', 'INF'],
  ['-inf', '-INF'],
  ['-infinity', '-INF'],
  ['nan', 'NaN'],
]);

/** "100.0" -> "100", "1.5" -> "1.5": the shortest form, as Oxigraph writes a float or double. */
function canonicalFloat(value: string): string {
  const special = SPECIAL_FLOATS.get(value.toLowerCase());
  if (special) return special;
  const n = Number(value);
  return Object.is(n, -0) ? '-0' : String(n);
}

/** The engine's N-Triples (Virtuoso separates terms by a tab), literals in the embedded store's forms. */
export function readEngineNTriples(text: string): Quad[] {
  return readStoreNTriples(text, '\t').map((t) => {
    const o = t.object;
    return o.termType === 'Literal'
      ? quad(t.subject, t.predicate, fromEngine(o.value, o.datatype.value, o.language || undefined))
      : t;
  });
}
