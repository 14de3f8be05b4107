import { xsd } from './vocab.js';

/**
 * JSON-LD 1.1's conversion of a JSON number to a literal (Deserialize JSON-LD to RDF, "Object to
 * RDF conversion"): a number with a fractional part, one of magnitude 10^21 or more, or one typed
 * xsd:double becomes the canonical xsd:double form; any other number the integer it is. The
 * double form has the fewest digits that read back as the same number.
 *
 * jsonld.js 9 parts from this in two places, and both change the value the client sent: it tests
 * "fractional" by looking for a "." in JavaScript's text of the number, so 1e-7 and 5e-324 become
 * "0"^^xsd:integer; and it writes doubles with 16 significant digits, so 0.30000000000000004
 * becomes 0.3. Both readers here follow the rule above instead (`jsonld-reference.ts` corrects
 * jsonld.js's output where it would part from it).
 */
export interface NumberLiteral {
  lexical: string;
  datatype: string;
}

export function numberLiteral(value: number, datatype?: string): NumberLiteral {
  if (!Number.isInteger(value) || Math.abs(value) >= 1e21 || datatype === xsd.double) {
    return { lexical: canonicalDouble(value), datatype: datatype ?? xsd.double };
  }
  return { lexical: value.toFixed(0), datatype: datatype ?? xsd.integer };
}

/** XSD's canonical double: one digit before the point, at least one after it, "E", the exponent. */
export function canonicalDouble(value: number): string {
  const [mantissa, exponent] = value.toExponential().split('e');
  return `${mantissa.includes('.') ? mantissa : `${mantissa}.0`}E${Number(exponent)}`;
}

/** What jsonld.js 9's toRDF makes of a number (toRdf.js `_objectToRDF`): where it parts from `numberLiteral`. */
export function jsonLdJsNumberLiteral(value: number, datatype?: string): NumberLiteral {
  const isDouble = String(value).includes('.') || Math.abs(value) >= 1e21;
  if (isDouble || datatype === xsd.double) {
    return { lexical: value.toExponential(15).replace(/(\d)0*e\+?/, '$1E'), datatype: datatype ?? xsd.double };
  }
  return { lexical: value.toFixed(0), datatype: datatype ?? xsd.integer };
}
