import jsonld from 'jsonld';
import { Parser } from 'n3';
import type { Limits } from '../config.js';
import { HttpError, badRequest } from '../errors.js';
import { fastJsonLdToQuads } from './jsonld-fast.js';
import { blankNode, defaultGraph, isValidIri, literal, namedNode, quad, type Quad, type Term } from './terms.js';
import { OUTPUT_CONTEXT, xsd } from './vocab.js';

export type BodyFormat = 'jsonld' | 'turtle';

const JSONLD_TYPES = new Set(['application/ld+json', 'application/json']);
const TURTLE_TYPES = new Set(['text/turtle', 'application/x-turtle']);

/** Which parser a request's Content-Type selects; 415 for anything else. */
export function bodyFormat(contentType: string | undefined, allowTurtle: boolean): BodyFormat {
  const mediaType = (contentType ?? '').split(';')[0].trim().toLowerCase();
  if (JSONLD_TYPES.has(mediaType)) return 'jsonld';
  if (allowTurtle && TURTLE_TYPES.has(mediaType)) return 'turtle';
  throw new HttpError(415, 'unsupported_content_type', {
    message: `Content-Type ${mediaType || '(none)'} is not supported; use application/ld+json${allowTurtle ? ' or text/turtle' : ''}`,
  });
}

/**
 * What must be refused before jsonld.js sees the document: nesting past the limit, contexts it
 * would fetch, and "__proto__" keys (jsonld.js copies objects by assignment, which turns such a
 * key into the copy's prototype and silently drops it, even in safe mode).
 */
function checkBeforeExpansion(value: unknown, maxDepth: number): void {
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (typeof node !== 'object' || node === null) continue;
    if (depth > maxDepth) throw badRequest('too_deep', `JSON nesting deeper than ${maxDepth} levels`);
    if (Array.isArray(node)) {
      for (const item of node) stack.push([item, depth + 1]);
      continue;
    }
    for (const [key, child] of Object.entries(node)) {
      if (key === '__proto__') throw badRequest('forbidden_key', 'a JSON key "__proto__" is not accepted');
      if (key === '@import') throw badRequest('remote_context', '@import is not supported: remote contexts are never fetched');
      if (key === '@context') {
        const contexts = Array.isArray(child) ? child : [child];
        if (contexts.some((c) => typeof c === 'string')) {
          throw badRequest('remote_context', 'remote @context references are not supported; give the context inline');
        }
      }
      stack.push([child, depth + 1]);
    }
  }
}

/** Remote documents are never fetched. */
const refuseRemoteDocuments = (url: string): never => {
  throw badRequest('remote_context', `remote document ${url} is not fetched; give contexts inline`);
};

interface JsonLdTerm {
  termType: string;
  value: string;
  datatype?: { value: string };
  language?: string;
}
interface JsonLdQuad {
  subject: JsonLdTerm;
  predicate: JsonLdTerm;
  object: JsonLdTerm;
  graph: JsonLdTerm;
}

export interface ParseOptions {
  /** Absolute IRI that relative references resolve against (always set: see jsonld prototype-pollution note). */
  base: string;
  limits: Limits;
}

function checkIri(iri: string, limits: Limits): void {
  if (iri.length > limits.iriLength) throw badRequest('iri_too_long', `an IRI is longer than ${limits.iriLength} characters`);
  if (!isValidIri(iri)) throw badRequest('invalid_iri', `not a valid absolute IRI: ${JSON.stringify(iri.slice(0, 200))}`);
  // `cargo:x` left as an absolute IRI means the client forgot to define the prefix; stored as is,
  // our own output (whose context defines it) would read back as a different IRI.
  const scheme = iri.slice(0, iri.indexOf(':'));
  if (Object.hasOwn(OUTPUT_CONTEXT, scheme)) {
    throw badRequest('undefined_prefix', `${JSON.stringify(iri.slice(0, 200))} uses the prefix ${scheme}: without defining it in @context`);
  }
}

function toTerm(t: JsonLdTerm): Term {
  switch (t.termType) {
    case 'NamedNode':
      return namedNode(t.value);
    case 'BlankNode':
      return blankNode(t.value.replace(/^_:/, ''));
    case 'Literal':
      if (t.language) return literal(t.value, t.language);
      return literal(t.value, namedNode(t.datatype?.value ?? xsd.string));
    default:
      return defaultGraph();
  }
}

const tooManyTriples = (limits: Limits) => badRequest('too_many_triples', `the body expands to more than ${limits.triples} triples`);

/**
 * The triples an expanded JSON-LD document makes, duplicates included: one per property value
 * and per type, two per list item (rdf:first, rdf:rest).
 */
function countStatements(expanded: unknown): number {
  let count = 0;
  const stack: unknown[] = [expanded];
  while (stack.length > 0) {
    const element = stack.pop();
    if (Array.isArray(element)) {
      for (const item of element) stack.push(item);
      continue;
    }
    if (typeof element !== 'object' || element === null) continue;
    for (const [key, value] of Object.entries(element)) {
      if (key === '@list') {
        count += 2 * (value as unknown[]).length;
        stack.push(value);
      } else if (key === '@type') {
        if (Array.isArray(value)) count += value.length; // a node's types; a value object's @type is its datatype
      } else if (key === '@graph' || key === '@included' || key === '@reverse') {
        stack.push(value);
      } else if (!key.startsWith('@')) {
        count += Array.isArray(value) ? value.length : 1;
        stack.push(value);
      }
      // Other keywords (@id, @value, @language, @index, @direction) make no triple; @value may hold JSON and is not entered.
    }
  }
  return count;
}

/** Checks the limits that apply to every body, whatever its syntax. */
function checkQuads(quads: Quad[], limits: Limits): Quad[] {
  if (quads.length > limits.triples) throw tooManyTriples(limits);
  for (const q of quads) {
    if (q.graph.termType !== 'DefaultGraph') throw badRequest('named_graph', 'named graphs are not accepted in a body');
    for (const term of [q.subject, q.predicate, q.object]) {
      if (term.termType === 'NamedNode') checkIri(term.value, limits);
      else if (term.termType === 'Literal' && !term.language) checkIri(term.datatype.value, limits);
    }
  }
  return quads;
}

async function parseJsonLd(text: string, options: ParseOptions): Promise<Quad[]> {
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch (err) {
    throw badRequest('invalid_json', `body is not valid JSON: ${(err as Error).message}`);
  }
  if (typeof document !== 'object' || document === null) throw badRequest('invalid_jsonld', 'a JSON-LD body must be an object or an array');
  checkBeforeExpansion(document, options.limits.depth);
  // The common shapes take a hand-written path that gives jsonld.js's quads exactly; anything
  // else (and everything jsonld.js would refuse) goes to jsonld.js.
  const fast = fastJsonLdToQuads(document);
  if (!fast) return jsonLdToQuads(document, options);
  if (fast.statements > options.limits.triples) throw tooManyTriples(options.limits);
  return fast.quads;
}

/** jsonld.js's reading (safe mode) of a document that passed checkBeforeExpansion: the reference. */
export async function jsonLdToQuads(document: unknown, options: ParseOptions): Promise<Quad[]> {
  const jsonLdOptions = { base: options.base, documentLoader: refuseRemoteDocuments, safe: true };
  let raw: JsonLdQuad[];
  try {
    // Expansion is linear; turning the expanded form into triples is quadratic in the values
    // of one property (jsonld.js de-duplicates by scanning), so the count is checked in between.
    const expanded = await jsonld.expand(document as jsonld.JsonLdDocument, jsonLdOptions as jsonld.Options.Expand);
    if (countStatements(expanded) > options.limits.triples) throw tooManyTriples(options.limits);
    raw = (await jsonld.toRDF(expanded, { ...jsonLdOptions, skipExpansion: true } as jsonld.Options.ToRdf)) as unknown as JsonLdQuad[];
  } catch (err) {
    if (err instanceof HttpError) throw err;
    const details = (err as { details?: { cause?: unknown; event?: { message?: string; details?: unknown } } }).details;
    if (details?.cause instanceof HttpError) throw details.cause;
    // Safe mode reports what it refused (a relative @id, a term without mapping, ...) in an event.
    const why = details?.event ? `${details.event.message} ${JSON.stringify(details.event.details ?? {}).slice(0, 300)}` : (err as Error).message;
    throw badRequest('invalid_jsonld', `body is not valid JSON-LD: ${why}`);
  }
  return raw.map((q) =>
    quad(
      toTerm(q.subject) as Quad['subject'],
      toTerm(q.predicate) as Quad['predicate'],
      toTerm(q.object) as Quad['object'],
      toTerm(q.graph) as Quad['graph'],
    ),
  );
}

function parseTurtle(text: string, options: ParseOptions): Quad[] {
  try {
    return new Parser({ baseIRI: options.base, format: 'text/turtle' }).parse(text);
  } catch (err) {
    throw badRequest('invalid_turtle', `body is not valid Turtle: ${(err as Error).message}`);
  }
}

/** Parses a request body into quads without fetching anything, within the configured limits. */
export async function parseBody(body: Buffer, format: BodyFormat, options: ParseOptions): Promise<Quad[]> {
  if (body.length === 0) throw badRequest('empty_body', 'the request body is empty');
  // A UTF-8 byte order mark is legal in front of a body but not valid JSON.
  const text = body.toString('utf8').replace(/^\uFEFF/, '');
  const quads = format === 'jsonld' ? await parseJsonLd(text, options) : parseTurtle(text, options);
  return checkQuads(quads, options.limits);
}
