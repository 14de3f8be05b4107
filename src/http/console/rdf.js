// RDF as the console reads it: the API's N-Triples answers, parsed and indexed by subject.
import { getText, isLocalObject } from './api.js';
import { elementOf, html } from './dom.js';

export const NS = {
  rdf: 'http://www.w3.org/1999/02/22-rdf-syntax-ns#',
  xsd: 'http://www.w3.org/2001/XMLSchema#',
  api: 'https://onerecord.iata.org/ns/api#',
  cargo: 'https://onerecord.iata.org/ns/cargo#',
  acl: 'http://www.w3.org/ns/auth/acl#',
  store: 'urn:onerecord:store:',
};
export const RDF_TYPE = `${NS.rdf}type`;
const CODE_LISTS = 'https://onerecord.iata.org/ns/code-lists/';

const TERM = /\s*(?:<([^>]*)>|_:(\S+)|"((?:[^"\\]|\\.)*)"(?:\^\^<([^>]*)>|@([A-Za-z0-9-]+))?)/y;
const ESCAPE = /\\(u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|.)/g;
const ESCAPED = { t: '\t', n: '\n', r: '\r', b: '\b', f: '\f', '"': '"', "'": "'", '\\': '\\' };
const unescape = (text) => text.replace(ESCAPE, (_, e) => (e.length > 1 ? String.fromCodePoint(parseInt(e.slice(1), 16)) : ESCAPED[e] ?? e));

/** The terms of one N-Triples line: `{ kind: 'iri' | 'blank' | 'literal', value, datatype?, language? }`. */
function parseLine(line) {
  const terms = [];
  TERM.lastIndex = 0;
  for (let i = 0; i < 3; i++) {
    const m = TERM.exec(line);
    if (!m) throw new Error(`not N-Triples: ${line.slice(0, 120)}`);
    if (m[1] !== undefined) terms.push({ kind: 'iri', value: unescape(m[1]) });
    else if (m[2] !== undefined) terms.push({ kind: 'blank', value: m[2] });
    else terms.push({ kind: 'literal', value: unescape(m[3]), datatype: m[4] ?? (m[5] ? undefined : `${NS.xsd}string`), language: m[5] });
  }
  return { s: terms[0], p: terms[1], o: terms[2] };
}

/** Triples of an N-Triples document. */
export function parseNTriples(text) {
  return text.split('\n').filter((line) => line.trim() && !line.trimStart().startsWith('#')).map(parseLine);
}

/** Identity of a term (two equal terms have the same key). */
export const termKey = (t) => `${t.kind}|${t.value}|${t.datatype ?? ''}|${t.language ?? ''}`;
export const tripleKey = (t) => `${t.s.value} ${t.p.value} ${termKey(t.o)}`;

/** Triples indexed by subject. */
export class Graph {
  constructor(triples) {
    this.triples = triples;
    this.bySubject = new Map();
    for (const t of triples) {
      const list = this.bySubject.get(t.s.value) ?? [];
      list.push(t);
      this.bySubject.set(t.s.value, list);
    }
  }
  about(subject) {
    return this.bySubject.get(subject) ?? [];
  }
  all(subject, predicate) {
    return this.about(subject).filter((t) => t.p.value === predicate).map((t) => t.o);
  }
  /** The value of the first object of (subject, predicate), or undefined. */
  value(subject, predicate) {
    return this.all(subject, predicate)[0]?.value;
  }
  subjectsOfType(type) {
    return [...this.bySubject.keys()].filter((s) => this.all(s, RDF_TYPE).some((o) => o.value === type));
  }
  /** The subject and predicate that point at `node`, if any (how a nested node is reached). */
  parentOf(node) {
    return this.triples.find((t) => t.o.kind !== 'literal' && t.o.value === node);
  }
}

/** The graph the API answers at `iriOrPath`, read as N-Triples. */
export async function getGraph(iriOrPath) {
  return new Graph(parseNTriples(await getText(iriOrPath, 'application/n-triples')));
}

/** An IRI as people read it: `cargo:Piece`, `StatusCode:DEP`, or the IRI itself. */
export function shortIri(iri) {
  for (const [prefix, ns] of Object.entries(NS)) if (iri.startsWith(ns) && iri.length > ns.length) return `${prefix}:${iri.slice(ns.length)}`;
  if (iri.startsWith(CODE_LISTS)) return iri.slice(CODE_LISTS.length).replace('#', ':');
  return iri;
}

/** The last part of an IRI (after # or the last /). */
export const localName = (iri) => iri.slice(Math.max(iri.lastIndexOf('#'), iri.lastIndexOf('/')) + 1);

/** A term shown in the page (markup): a link for this server's Logistics Objects, a short name for other IRIs, the text of a literal. */
export function termViewHtml(term) {
  if (term.kind === 'literal') {
    const typed = term.datatype && term.datatype !== `${NS.xsd}string` ? shortIri(term.datatype) : undefined;
    const title = typed ?? (term.language ? `@${term.language}` : undefined);
    return html`<span class="literal"${title ? html` title="${title}"` : ''}>${term.value}</span>`;
  }
  if (term.kind === 'iri' && isLocalObject(term.value)) return objectLinkHtml(term.value);
  return html`<span class="iri" title="${term.value}">${shortIri(term.value)}</span>`;
}

/** The same term, an element. */
export const termView = (term) => elementOf(termViewHtml(term));

/** A link to a Logistics Object's page in the console (markup). */
export const objectLinkHtml = (iri, label = localName(iri)) => html`<a href="#/object?iri=${encodeURIComponent(iri)}" title="${iri}">${label}</a>`;

/** The same link, an element. */
export const objectLink = (iri, label) => elementOf(objectLinkHtml(iri, label));
