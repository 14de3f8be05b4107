import type { SparqlJsonResults } from '../../readers.js';
import { literal, namedNode, termToNt, type RDF } from '../../../rdf/terms.js';
import { xsd } from '../../../rdf/vocab.js';

const XSD = 'http://www.w3.org/2001/XMLSchema#';
/** `-`, then no leading zero, no trailing fraction zero: how Oxigraph writes integers and decimals back. */
const INTEGER = /^-?(0|[1-9][0-9]{0,17})$/;
const DECIMAL = /^-?(0|[1-9][0-9]{0,17})(\.[0-9]{0,17}[1-9])?$/;
const TIME_ZONE = '(Z|(?![+-]00:00)[+-](0[0-9]|1[0-3]):[0-5][0-9])';
const DATE = '[1-9][0-9]{3}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])';
const DATE_TIME = new RegExp(`^${DATE}T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]{0,8}[1-9])?${TIME_ZONE}?$`);
const DATE_ONLY = new RegExp(`^${DATE}${TIME_ZONE}?$`);

/** Digits of a decimal numeral from its first non-zero one (trailing zeros included). */
const significantDigits = (numeral: string) => numeral.replace(/^-?[0.]*/, '').replace('.', '').length;

/**
 * Whether Oxigraph surely keeps `l` exactly as it is (forms checked against it by
 * test/change-requests-values.test.ts). Conservative: false only means "ask the store".
 */
export function surelyCanonical(l: RDF.Literal): boolean {
  if (l.language !== '') return l.language === l.language.toLowerCase();
  const type = l.datatype.value;
  if (!type.startsWith(XSD)) return false;
  const v = l.value;
  switch (type.slice(XSD.length)) {
    case 'string':
      return true;
    case 'boolean':
      return v === 'true' || v === 'false';
    case 'integer':
      return INTEGER.test(v) && v !== '-0';
    case 'decimal':
      return DECIMAL.test(v) && v !== '-0';
    case 'double':
      // ECMAScript writes the shortest digits that read back as the same double, and switches to
      // an exponent outside 1e-7..1e21, which this refuses. Oxigraph agrees only up to 15
      // significant digits (those read back exactly): "-567772714851686.2" it writes as ".3".
      return DECIMAL.test(v) && v !== '-0' && significantDigits(v) <= 15 && String(Number(v)) === v;
    case 'dateTime':
      // A UTC offset of ±00:00 is written back as Z, 24:00:00 as the next day; a day the month lacks is kept as
      // written.
      return DATE_TIME.test(v);
    case 'date':
      return DATE_ONLY.test(v);
    default:
      return false;
  }
}

/**
 * The literals as Oxigraph stores them (values, not lexical forms: "20.0"^^xsd:double is "20"), asked of Oxigraph
 * itself so that comparisons with stored data are exact for every datatype; literals already in that form skip
 * the query, which costs more than the rest of writing a small object
 * (docs/storage.md, "Stored values, Oxigraph's memory and the in-memory indexes").
 */
export function canonicalLiterals(
  index: { select(sparql: string): SparqlJsonResults },
  literals: readonly RDF.Literal[],
): RDF.Literal[] {
  const out = [...literals];
  const asked = out.map((l, i) => [l, i] as const).filter(([l]) => !surelyCanonical(l));
  if (asked.length === 0) return out;
  const rows = asked.map(([l, i]) => `(${i} ${termToNt(l)})`).join(' ');
  for (const b of index.select(`SELECT ?i ?v WHERE { VALUES (?i ?v) { ${rows} } }`).results.bindings) {
    const v = b.v;
    out[Number(b.i.value)] = v['xml:lang']
      ? literal(v.value, v['xml:lang'])
      : literal(v.value, namedNode(v.datatype ?? xsd.string));
  }
  return out;
}
