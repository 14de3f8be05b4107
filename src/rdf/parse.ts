import jsonld from 'jsonld';
import { Parser } from 'n3';
import type { Limits } from '../config.js';
import { HttpError, badRequest } from '../errors.js';
import { blankNode, defaultGraph, isValidIri, literal, namedNode, quad, type Quad, type Term } from './terms.js';
import { xsd } from './vocab.js';

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

function checkDepthAndContexts(value: unknown, maxDepth: number): void {
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
}

function toTerm(t: JsonLdTerm, limits: Limits): Term {
  switch (t.termType) {
    case 'NamedNode':
      checkIri(t.value, limits);
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

/** Checks the limits that apply to every body, whatever its syntax. */
function checkQuads(quads: Quad[], limits: Limits): Quad[] {
  if (quads.length > limits.triples) throw badRequest('too_many_triples', `the body expands to more than ${limits.triples} triples`);
  for (const q of quads) {
    if (q.graph.termType !== 'DefaultGraph') throw badRequest('named_graph', 'named graphs are not accepted in a body');
    for (const term of [q.subject, q.predicate, q.object]) if (term.termType === 'NamedNode') checkIri(term.value, limits);
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
  checkDepthAndContexts(document, options.limits.depth);
  let raw: JsonLdQuad[];
  try {
    raw = (await jsonld.toRDF(document as jsonld.JsonLdDocument, {
      base: options.base,
      documentLoader: refuseRemoteDocuments,
      safe: true,
    } as jsonld.Options.ToRdf)) as unknown as JsonLdQuad[];
  } catch (err) {
    if (err instanceof HttpError) throw err;
    const cause = (err as { details?: { cause?: unknown } }).details?.cause;
    if (cause instanceof HttpError) throw cause;
    throw badRequest('invalid_jsonld', `body is not valid JSON-LD: ${(err as Error).message}`);
  }
  if (raw.length > options.limits.triples) throw badRequest('too_many_triples', `the body expands to more than ${options.limits.triples} triples`);
  return raw.map((q) =>
    quad(
      toTerm(q.subject, options.limits) as Quad['subject'],
      toTerm(q.predicate, options.limits) as Quad['predicate'],
      toTerm(q.object, options.limits) as Quad['object'],
      toTerm(q.graph, options.limits) as Quad['graph'],
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
  const text = body.toString('utf8');
  const quads = format === 'jsonld' ? await parseJsonLd(text, options) : parseTurtle(text, options);
  return checkQuads(quads, options.limits);
}
