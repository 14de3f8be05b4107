import { Parser } from 'n3';
import { literal, namedNode, quad, type Quad } from './terms.js';

const ESCAPED = /\\(?:u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|(.))/g;
/** A quote with an even number of backslashes (none included) before it. */
const UNESCAPED_QUOTE = /(?:^|[^\\])(?:\\\\)*"/;
const SINGLE_ESCAPES: Record<string, string> = {
  t: '\t',
  b: '\b',
  n: '\n',
  r: '\r',
  f: '\f',
  '"': '"',
  "'": "'",
  '\\': '\\',
};

function unescapeText(text: string): string | undefined {
  let valid = true;
  const out = text.replace(ESCAPED, (_, u4: string | undefined, u8: string | undefined, single: string | undefined) => {
    if (u4 ?? u8) return String.fromCodePoint(parseInt((u4 ?? u8)!, 16));
    const c = SINGLE_ESCAPES[single!];
    if (c === undefined) valid = false;
    return c ?? '';
  });
  return valid ? out : undefined;
}

/**
 * The triples of one line, or undefined where it is not in the form the store writes (its terms separated by
 * `separator`).
 */
function readLine(text: string, start: number, end: number, separator: string): Quad | undefined {
  // Subject and predicate: IRIs (the store holds no blank nodes; n3 renames those it reads).
  if (text.charCodeAt(start) !== 60 /* < */) return undefined;
  const subjectEnd = text.indexOf(`>${separator}<`, start);
  if (subjectEnd < 0 || subjectEnd >= end) return undefined;
  const predicateStart = subjectEnd + 3;
  const predicateEnd = text.indexOf(`>${separator}`, predicateStart);
  if (predicateEnd < 0 || predicateEnd >= end) return undefined;
  const subject = text.slice(start + 1, subjectEnd);
  const predicate = text.slice(predicateStart, predicateEnd);
  if (subject.includes('>') || predicate.includes('>')) return undefined;
  const objectStart = predicateEnd + 2;
  // Every line ends in " ." (a final newline is not part of [start, end)).
  if (text.charCodeAt(end - 1) !== 46 /* . */ || text.charCodeAt(end - 2) !== 32) return undefined;
  const objectEnd = end - 2;
  const first = text.charCodeAt(objectStart);
  if (first === 60 /* < */) {
    const iri = text.slice(objectStart + 1, objectEnd - 1);
    if (text.charCodeAt(objectEnd - 1) !== 62 /* > */ || iri.includes('>')) return undefined;
    return quad(namedNode(subject), namedNode(predicate), namedNode(iri));
  }
  if (first !== 34 /* " */) return undefined;
  // The closing quote: the last one of the object, which an escaped quote can never be after the tag or datatype.
  const close = text.lastIndexOf('"', objectEnd - 1);
  if (close <= objectStart) return undefined;
  const raw = text.slice(objectStart + 1, close);
  if (raw.includes('"') && UNESCAPED_QUOTE.test(raw)) return undefined;
  const value = raw.includes('\\') ? unescapeText(raw) : raw;
  if (value === undefined) return undefined;
  const after = text.slice(close + 1, objectEnd);
  if (after === '') return quad(namedNode(subject), namedNode(predicate), literal(value));
  if (after.startsWith('@') && /^@[a-zA-Z]+(-[a-zA-Z0-9]+)*$/.test(after))
    return quad(namedNode(subject), namedNode(predicate), literal(value, after.slice(1)));
  if (after.startsWith('^^<') && after.endsWith('>') && !after.slice(3, -1).includes('>')) {
    return quad(namedNode(subject), namedNode(predicate), literal(value, namedNode(after.slice(3, -1))));
  }
  return undefined;
}

/**
 * N-Triples in the store's form (one triple per line, as Oxigraph dumps a graph) as N-Quads lines of `graph`, a graph
 * name the store holds (so a valid IRI, not checked again).
 */
export const ntriplesInGraph = (ntriples: string, graph: string): string =>
  ntriples.replaceAll(' .\n', ` <${graph}> .\n`);

/**
 * Reads N-Triples in the form the store writes them (Oxigraph's graph dumps, the archive's lines):
 * one triple per line, terms separated by one space (`separator`: Virtuoso separates them by a tab),
 * IRIs and literals only. A fraction of the cost of n3's general parser, which reads every revision
 * of an object changed; the general parser stays the reference (test/ntriples.test.ts) and reads any
 * text that is not in that form.
 */
export function readStoreNTriples(text: string, separator: ' ' | '\t' = ' '): Quad[] {
  const out: Quad[] = [];
  let start = 0;
  while (start < text.length) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    if (end > start) {
      const read = readLine(text, start, end, separator);
      if (!read) return new Parser({ format: 'application/n-triples' }).parse(text);
      out.push(read);
    }
    start = end + 1;
  }
  return out;
}
