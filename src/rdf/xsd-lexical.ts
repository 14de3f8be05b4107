import { badRequest } from '../errors.js';
import { XSD } from './vocab.js';

/**
 * Lexical forms of the XSD datatypes (XML Schema 1.1 part 2), with their value constraints:
 * integer ranges, real calendar dates, time zones within ±14:00. The store keeps typed values, so
 * an ill-typed literal ("abc"^^xsd:integer, "2024-02-30"^^xsd:date) would be kept as an opaque
 * string that no comparison or filter treats as the value it claims to be: such literals are
 * refused instead.
 */

const TIME_ZONE = '(Z|[+-]((0\\d|1[0-3]):[0-5]\\d|14:00))?';
const YEAR = '-?([1-9]\\d{4,}|\\d{4})';
const TIME = '(([01]\\d|2[0-3]):[0-5]\\d:[0-5]\\d(\\.\\d+)?|24:00:00(\\.0+)?)';
const DATE_TIME = new RegExp(`^${YEAR}-(\\d{2})-(\\d{2})T${TIME}${TIME_ZONE}$`);
const DATE = new RegExp(`^${YEAR}-(\\d{2})-(\\d{2})${TIME_ZONE}$`);
const INTEGER = /^[+-]?\d+$/;
const DECIMAL = /^[+-]?(\d+(\.\d*)?|\.\d+)$/;
const FLOATING = /^([+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?|[+-]?INF|NaN)$/;
const DURATION = /^-?P(?=.)(\d+Y)?(\d+M)?(\d+D)?(T(?=.)(\d+H)?(\d+M)?(\d+(\.\d+)?S)?)?$/;
const DAY_TIME_DURATION = /^-?P(?=.)(\d+D)?(T(?=.)(\d+H)?(\d+M)?(\d+(\.\d+)?S)?)?$/;
/** One base64 character, optionally followed by a space; a quad of them encodes three bytes. */
const B64 = '[A-Za-z0-9+/] ?';
/** XSD base64Binary: whole quads, the last one possibly padded with `=` (its last character then limited). */
const BASE64 = new RegExp(
  `^((${B64}){4})*((${B64}){3}[A-Za-z0-9+/]|(${B64}){2}[AEIMQUYcgkosw048] ?=|${B64}[AQgw] ?= ?=)?$`,
);
const YEAR_MONTH_DURATION = /^-?P(?=.)(\d+Y)?(\d+M)?$/;

const isLeapYear = (year: number) => (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** A month 01-12 and a day that month has (29 February only in leap years; any year when `year` is undefined). */
function isRealDay(month: string, day: string, year?: number): boolean {
  const m = Number(month);
  const d = Number(day);
  if (m < 1 || m > 12 || d < 1) return false;
  const days = m === 2 && (year === undefined || isLeapYear(year)) ? 29 : DAYS_IN_MONTH[m - 1];
  return d <= days;
}

/** A dateTime or date: the pattern, then a day the month has. */
function calendarForm(pattern: RegExp, lexical: string): boolean {
  const match = pattern.exec(lexical);
  if (!match) return false;
  const yearText = lexical.startsWith('-')
    ? lexical.slice(0, lexical.indexOf('-', 1))
    : lexical.slice(0, lexical.indexOf('-'));
  return isRealDay(match[2], match[3], Number(yearText));
}

const inRange = (min: bigint | undefined, max: bigint | undefined) => (lexical: string) => {
  if (!INTEGER.test(lexical)) return false;
  const value = BigInt(lexical);
  return (min === undefined || value >= min) && (max === undefined || value <= max);
};
const signedBits = (bits: number) => inRange(-(2n ** BigInt(bits - 1)), 2n ** BigInt(bits - 1) - 1n);
const unsignedBits = (bits: number) => inRange(0n, 2n ** BigInt(bits) - 1n);
const matches = (pattern: RegExp) => (lexical: string) => pattern.test(lexical);

const CHECKS: Readonly<Record<string, (lexical: string) => boolean>> = {
  string: () => true,
  boolean: matches(/^(true|false|1|0)$/),
  decimal: matches(DECIMAL),
  double: matches(FLOATING),
  float: matches(FLOATING),
  integer: matches(INTEGER),
  long: signedBits(64),
  int: signedBits(32),
  short: signedBits(16),
  byte: signedBits(8),
  nonNegativeInteger: inRange(0n, undefined),
  positiveInteger: inRange(1n, undefined),
  nonPositiveInteger: inRange(undefined, 0n),
  negativeInteger: inRange(undefined, -1n),
  unsignedLong: unsignedBits(64),
  unsignedInt: unsignedBits(32),
  unsignedShort: unsignedBits(16),
  unsignedByte: unsignedBits(8),
  dateTime: (lexical) => calendarForm(DATE_TIME, lexical),
  dateTimeStamp: (lexical) => calendarForm(DATE_TIME, lexical) && /(Z|[+-]\d{2}:\d{2})$/.test(lexical),
  date: (lexical) => calendarForm(DATE, lexical),
  time: matches(new RegExp(`^${TIME}${TIME_ZONE}$`)),
  gYear: matches(new RegExp(`^${YEAR}${TIME_ZONE}$`)),
  gYearMonth: matches(new RegExp(`^${YEAR}-(0[1-9]|1[0-2])${TIME_ZONE}$`)),
  gMonth: matches(new RegExp(`^--(0[1-9]|1[0-2])${TIME_ZONE}$`)),
  gDay: matches(new RegExp(`^---(0[1-9]|[12]\\d|3[01])${TIME_ZONE}$`)),
  gMonthDay: (lexical) => {
    const match = new RegExp(`^--(\\d{2})-(\\d{2})${TIME_ZONE}$`).exec(lexical);
    return match !== null && isRealDay(match[1], match[2]);
  },
  duration: matches(DURATION),
  dayTimeDuration: matches(DAY_TIME_DURATION),
  yearMonthDuration: matches(YEAR_MONTH_DURATION),
  hexBinary: matches(/^([0-9a-fA-F]{2})*$/),
  base64Binary: matches(BASE64),
  anyURI: () => true,
  normalizedString: matches(/^[^\r\n\t]*$/),
  token: matches(/^([^\s]+( [^\s]+)*)?$/),
  language: matches(/^[a-zA-Z]{1,8}(-[a-zA-Z0-9]{1,8})*$/),
};

/** Whether `datatype` is an XSD datatype this server knows. */
export const isXsdDatatype = (datatype: string) =>
  datatype.startsWith(XSD) && Object.hasOwn(CHECKS, datatype.slice(XSD.length));

/** Whether `lexical` is a valid lexical form of `datatype`; datatypes other than the XSD ones above are not checked. */
export function isWellTyped(lexical: string, datatype: string): boolean {
  if (!isXsdDatatype(datatype)) return true;
  return CHECKS[datatype.slice(XSD.length)](lexical);
}

/** A literal whose text is not of its datatype: 400 naming the property it is a value of. */
export const illTypedLiteral = (lexical: string, datatype: string, property: string) =>
  badRequest(
    'ill_typed_literal',
    `${JSON.stringify(lexical.slice(0, 100))} is not a valid ${datatype} (the value of ${property})`,
    property,
  );
