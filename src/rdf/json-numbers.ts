import { xsd } from './vocab.js';

/**
 * JSON-LD 1.1's conversion of a JSON number to a literal (Deserialize JSON-LD to RDF, "Object to RDF
 * conversion"): a number with a fractional part, of magnitude 10^21 or more, or typed xsd:double
 * becomes the canonical xsd:double form (the fewest digits that read back as the same number); any
 * other the integer it is. Both readers follow this where jsonld.js 9 does not (it makes 1e-7
 * "0"^^xsd:integer and writes doubles with 16 digits); `jsonld-reference.ts` corrects its output.
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
