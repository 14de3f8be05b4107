import type { SparqlReader } from './graph-store.js';
import { literal, namedNode, termToNt, type RDF } from '../rdf/terms.js';
import { xsd } from '../rdf/vocab.js';

/**
 * The literals as Oxigraph stores them: it keeps typed values, not lexical forms, so
 * "20.0"^^xsd:double comes back as "20", "05"^^xsd:int as "5"^^xsd:integer and language tags
 * lower-cased. Asking Oxigraph itself (a VALUES query normalises like storage does) keeps
 * comparisons with stored data exact for every datatype. Plain strings never change and skip it.
 */
export function canonicalLiterals(index: SparqlReader, literals: readonly RDF.Literal[]): RDF.Literal[] {
  const out = [...literals];
  const asked = out.map((l, i) => [l, i] as const).filter(([l]) => l.language !== '' || l.datatype.value !== xsd.string);
  if (asked.length === 0) return out;
  const rows = asked.map(([l, i]) => `(${i} ${termToNt(l)})`).join(' ');
  for (const b of index.select(`SELECT ?i ?v WHERE { VALUES (?i ?v) { ${rows} } }`).results.bindings) {
    const v = b.v;
    out[Number(b.i.value)] = v['xml:lang'] ? literal(v.value, v['xml:lang']) : literal(v.value, namedNode(v.datatype ?? xsd.string));
  }
  return out;
}
