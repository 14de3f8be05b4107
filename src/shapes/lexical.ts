import { RDF, XSD } from '../rdf/vocab.js';

const INTEGER = /^[-+]?[0-9]+$/;
const DECIMAL = /^[-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)$/;
const FLOAT = /^([-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([Ee][-+]?[0-9]+)?|[-+]?INF|NaN)$/;
const TIMEZONE = '(Z|[-+]((0[0-9]|1[0-3]):[0-5][0-9]|14:00))?';
const DATE = `-?([1-9][0-9]{3,}|0[0-9]{3})-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])`;
const DATE_TIME = new RegExp(`^${DATE}T(([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]+)?|24:00:00(\\.0+)?)${TIMEZONE}$`);
const DATE_ONLY = new RegExp(`^${DATE}${TIMEZONE}$`);
const TIME_PART = 'T(([0-9]+H)([0-9]+M)?([0-9]+(\\.[0-9]+)?S)?|([0-9]+M)([0-9]+(\\.[0-9]+)?S)?|([0-9]+(\\.[0-9]+)?S))';
const DURATION = new RegExp(`^-?P((([0-9]+Y([0-9]+M)?([0-9]+D)?|([0-9]+M)([0-9]+D)?|([0-9]+D))(${TIME_PART})?)|(${TIME_PART}))$`);

const integerIn = (min?: bigint, max?: bigint) => (v: string) => {
  if (!INTEGER.test(v)) return false;
  const n = BigInt(v);
  return (min === undefined || n >= min) && (max === undefined || n <= max);
};

/**
 * Whether a lexical form is in the lexical space of its datatype (XML Schema 1.1), for the
 * datatypes the shapes accept; other datatypes are not refused here.
 */
const LEXICAL: Readonly<Record<string, (value: string) => boolean>> = {
  [`${XSD}string`]: () => true,
  [`${RDF}langString`]: () => true,
  [`${XSD}anyURI`]: () => true,
  [`${XSD}boolean`]: (v) => v === 'true' || v === 'false' || v === '1' || v === '0',
  [`${XSD}decimal`]: (v) => DECIMAL.test(v),
  [`${XSD}double`]: (v) => FLOAT.test(v),
  [`${XSD}float`]: (v) => FLOAT.test(v),
  [`${XSD}integer`]: integerIn(),
  [`${XSD}int`]: integerIn(-2147483648n, 2147483647n),
  [`${XSD}long`]: integerIn(-9223372036854775808n, 9223372036854775807n),
  [`${XSD}nonNegativeInteger`]: integerIn(0n),
  [`${XSD}positiveInteger`]: integerIn(1n),
  [`${XSD}dateTime`]: (v) => DATE_TIME.test(v),
  [`${XSD}date`]: (v) => DATE_ONLY.test(v),
  [`${XSD}duration`]: (v) => DURATION.test(v),
};

export function isWellFormed(value: string, datatype: string): boolean {
  return LEXICAL[datatype]?.(value) ?? true;
}

/** The numeric value of a literal of a numeric datatype, for sh:minInclusive; undefined if it has none. */
export function numericValue(value: string, datatype: string): number | undefined {
  if (!datatype.startsWith(XSD) || !isWellFormed(value, datatype)) return undefined;
  const local = datatype.slice(XSD.length);
  if (!['decimal', 'double', 'float', 'integer', 'int', 'long', 'nonNegativeInteger', 'positiveInteger'].includes(local)) return undefined;
  const n = Number(value.replace(/^\+/, '').replace(/^(-?)INF$/, '$1Infinity'));
  return Number.isNaN(n) ? undefined : n;
}
