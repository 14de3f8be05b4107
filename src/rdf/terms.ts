import { DataFactory, Literal as N3Literal, type NamedNode as N3NamedNode } from 'n3';
import type * as RDF from '@rdfjs/types';
import { rdf, xsd } from './vocab.js';

export type { RDF };
export type Quad = RDF.Quad;
export type Term = RDF.Term;
export const { namedNode, quad, defaultGraph, blankNode } = DataFactory;

/** One NamedNode per datatype: literals share it, as they share the few datatypes there are. */
const DATATYPES = new Map<string, N3NamedNode>();
const datatypeNode = (iri: string) => {
  let node = DATATYPES.get(iri);
  if (!node) {
    node = namedNode(iri);
    DATATYPES.set(iri, node);
  }
  return node;
};

/**
 * An n3 literal (the same id, so it equals and indexes as n3's own) that keeps its parts as fields:
 * n3's Literal reads value, language and datatype out of its id on every access, the datatype as a
 * new NamedNode each time, and a write reads each literal's parts several times (the parse checks,
 * the shape checks, the change's keys, the record's N-Quads).
 */
class FieldLiteral extends N3Literal {
  override readonly value: string = '';
  override readonly language: string = '';
  override readonly datatype: N3NamedNode;

  constructor(id: string, value: string, language: string, datatype: string) {
    super(id);
    this.value = value;
    this.language = language;
    this.datatype = datatypeNode(datatype);
  }

  /** n3's writer asks every literal; one with a base direction is made by n3 (`literal`). */
  get direction(): '' {
    return '';
  }
}

/**
 * n3's `DataFactory.literal`, as a FieldLiteral for a string value with a language tag or a
 * datatype (what parsers and the store make); anything else (numbers, dates, a base direction) as n3 makes it.
 */
export function literal(value: string | number, languageOrDatatype?: string | RDF.NamedNode): RDF.Literal {
  if (typeof value !== 'string') return DataFactory.literal(value, languageOrDatatype);
  if (typeof languageOrDatatype === 'string') {
    if (languageOrDatatype.includes('--')) return DataFactory.literal(value, languageOrDatatype);
    const language = languageOrDatatype.toLowerCase();
    return new FieldLiteral(`"${value}"@${language}`, value, language, rdf.langString);
  }
  const datatype = languageOrDatatype?.value || xsd.string;
  return new FieldLiteral(datatype === xsd.string ? `"${value}"` : `"${value}"^^${datatype}`, value, '', datatype);
}

/** `text` in memory of its own (V8 keeps a string sliced from a larger one as a view that holds all of that one). */
export const ownCopy = (text: string) => Buffer.from(text, 'utf8').toString('utf8');

/**
 * `q` with strings of its own: terms read from a larger text are slices of it, so triples kept (a cache) from an
 * answer shared by several would keep the whole answer alive.
 */
export function detachedQuad(q: Quad): Quad {
  const [s, p, o] = [q.subject, q.predicate, q.object];
  const subject = s.termType === 'NamedNode' ? namedNode(ownCopy(s.value)) : s;
  const object =
    o.termType === 'NamedNode'
      ? namedNode(ownCopy(o.value))
      : o.termType === 'Literal'
        ? literal(ownCopy(o.value), o.language || o.datatype)
        : o;
  return quad(subject, namedNode(ownCopy(p.value)), object, q.graph);
}

const ESCAPES: Record<string, string> = { '"': '\\"', '\\': '\\\\', '\n': '\\n', '\r': '\\r' };
const LITERAL_ESCAPE = /["\\\n\r]/g;
// biome-ignore lint/suspicious/noControlCharactersInRegex: IRIREF of N-Triples and Turtle excludes #x00-#x20
const IRI_FORBIDDEN = /[\u0000-\u0020<>"{}|^`\\]/;
const LANGUAGE_TAG = /^[a-zA-Z]{1,8}(-[a-zA-Z0-9]{1,8})*$/;

export function isValidIri(iri: string): boolean {
  return !IRI_FORBIDDEN.test(iri) && /^[A-Za-z][A-Za-z0-9+.-]*:/.test(iri);
}

/**
 * N-Triples forms of IRIs already checked: writes serialise the same IRIs over and over, a lookup is
 * cheaper than the regular expression, and the same flat string keeps a record's text from being a
 * rope of small pieces. Emptied when full.
 */
const IRI_NT = new Map<string, string>();
/** Small enough to stay in CPU caches: unique IRIs (ids of new nodes) pass through it quickly. */
const IRI_NT_KEPT = 10_000;

export function iriToNt(iri: string): string {
  let nt = IRI_NT.get(iri);
  if (nt === undefined) {
    if (IRI_FORBIDDEN.test(iri)) throw new Error(`not a valid IRI: ${JSON.stringify(iri)}`);
    if (IRI_NT.size >= IRI_NT_KEPT) IRI_NT.clear();
    nt = `<${iri}>`;
    IRI_NT.set(iri, nt);
  }
  return nt;
}

/** N-Triples form of a term; blank nodes are refused because stored data never holds them. */
export function termToNt(term: Term): string {
  switch (term.termType) {
    case 'NamedNode':
      return iriToNt(term.value);
    case 'Literal': {
      const lexical = `"${term.value.replace(LITERAL_ESCAPE, (c) => ESCAPES[c])}"`;
      if (term.language) {
        if (!LANGUAGE_TAG.test(term.language))
          throw new Error(`not a valid language tag: ${JSON.stringify(term.language)}`);
        return `${lexical}@${term.language}`;
      }
      return term.datatype.value === xsd.string ? lexical : `${lexical}^^${iriToNt(term.datatype.value)}`;
    }
    case 'DefaultGraph':
      return '';
    default:
      throw new Error(`a ${term.termType} cannot be stored`);
  }
}

/** Subject, predicate and object in N-Triples form, without the graph and the final dot. */
const tripleTerms = (q: Quad) => `${termToNt(q.subject)} ${termToNt(q.predicate)} ${termToNt(q.object)}`;

export function tripleToNt(q: Quad): string {
  return `${tripleTerms(q)} .\n`;
}

export function quadToNq(q: Quad): string {
  const g = q.graph.termType === 'DefaultGraph' ? '' : ` ${termToNt(q.graph)}`;
  return `${tripleTerms(q)}${g} .\n`;
}

/**
 * `tripleTerms` kept per triple object, since every revision is a full copy that writes an object's
 * unchanged triples again; kept as one flat string, as a concatenation is a tree of string objects
 * for the garbage collector to walk. (`tripleTerms` stays a concatenation for lines written once.)
 */
const TRIPLE_TERMS = new WeakMap<Quad, string>();
const flatTripleTerms = (q: Quad) => [termToNt(q.subject), termToNt(q.predicate), termToNt(q.object)].join(' ');

/** The N-Quads lines that put `triples` into `graph`, each exactly as `quadToNq` writes it. */
export function triplesInGraphToNq(triples: readonly Quad[], graph: string): string[] {
  const tail = ` ${iriToNt(graph)} .\n`;
  return triples.map((t) => {
    let terms = TRIPLE_TERMS.get(t);
    if (terms === undefined) {
      terms = flatTripleTerms(t);
      TRIPLE_TERMS.set(t, terms);
    }
    return terms + tail;
  });
}

export const xsdLiteral = (value: string | number | boolean, datatype: string) =>
  literal(String(value), namedNode(datatype));

/**
 * An xsd:dateTime literal in the canonical form the store keeps (no trailing zeros in the
 * fraction), so a value built here equals the same value read back from the store.
 */
export function dateTimeLiteral(date: Date): RDF.Literal {
  // toISOString always ends in `.sssZ`; string steps, not a regular expression: every write dates a few nodes.
  const iso = date.toISOString();
  let end = iso.length - 1;
  while (iso.charCodeAt(end - 1) === 0x30 /* 0 */) end--;
  if (iso.charCodeAt(end - 1) === 0x2e /* . */) end--;
  return literal(`${iso.slice(0, end)}Z`, namedNode(xsd.dateTime));
}
