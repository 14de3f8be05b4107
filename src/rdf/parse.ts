import { Parser } from 'n3';
import type { Limits } from '../config.js';
import { HttpError, badRequest } from '../errors.js';
import { fastJsonLdToQuads } from './jsonld-fast.js';
import { jsonLdToQuads, tooManyTriples, type ReadOptions } from './jsonld-reference.js';
import { isValidIri, type Quad } from './terms.js';
import { tripleKey } from './triples.js';
import { OUTPUT_CONTEXT } from './vocab.js';
import { illTypedLiteral, isWellTyped } from './xsd-lexical.js';

export type BodyFormat = 'jsonld' | 'turtle';

/** Refuses bytes that are not UTF-8 instead of replacing them (which would store other text than was sent). */
const UTF8 = new TextDecoder('utf-8', { fatal: true });

const JSONLD_TYPES = new Set(['application/ld+json', 'application/json']);
const TURTLE_TYPES = new Set(['text/turtle', 'application/x-turtle']);

/**
 * Which parser a request's Content-Type selects; 415 for anything else, and for a charset other
 * than UTF-8 (the only one JSON-LD and Turtle bodies are read in: read as UTF-8 anyway, another
 * charset's text would be stored altered).
 */
export function bodyFormat(contentType: string | undefined, allowTurtle: boolean): BodyFormat {
  const [type, ...parameters] = (contentType ?? '').split(';');
  const mediaType = type.trim().toLowerCase();
  const format = JSONLD_TYPES.has(mediaType)
    ? 'jsonld'
    : allowTurtle && TURTLE_TYPES.has(mediaType)
      ? 'turtle'
      : undefined;
  if (!format) {
    throw new HttpError(415, 'unsupported_content_type', {
      message:
        `Content-Type ${mediaType || '(none)'} is not supported; ` +
        `use application/ld+json${allowTurtle ? ' or text/turtle' : ''}`,
    });
  }
  for (const parameter of parameters) {
    const [name, value = ''] = parameter.split('=').map((part) => part.trim());
    const charset = value.replace(/^"(.*)"$/, '$1').toLowerCase();
    if (name.toLowerCase() === 'charset' && charset !== 'utf-8' && charset !== 'utf8') {
      throw new HttpError(415, 'unsupported_charset', {
        message: `charset ${JSON.stringify(charset.slice(0, 50))} is not supported; send the body in UTF-8`,
      });
    }
  }
  return format;
}

const isJsonObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * What must be refused before either JSON-LD reader sees the document: nesting past the limit,
 * contexts that would be fetched, "__proto__" keys (jsonld.js would silently make one the copy's
 * prototype, even in safe mode), and contexts too large to process. A @context costs about the terms
 * in scope there, scoped contexts included, so each counts its own terms plus those of the contexts
 * around it against `limits.contextTerms`: refused in the time it takes to count, not jsonld.js's.
 */
function checkBeforeExpansion(value: unknown, limits: Limits): void {
  let contextTerms = 0;
  const stack: [node: unknown, depth: number, termsInScope: number][] = [[value, 1, 0]];
  while (stack.length > 0) {
    const [node, depth, termsInScope] = stack.pop()!;
    if (typeof node !== 'object' || node === null) continue;
    if (depth > limits.depth) throw badRequest('too_deep', `JSON nesting deeper than ${limits.depth} levels`);
    if (Array.isArray(node)) {
      for (const item of node) stack.push([item, depth + 1, termsInScope]);
      continue;
    }
    let inScope = termsInScope;
    if (Object.hasOwn(node, '@context')) {
      const local = (node as Record<string, unknown>)['@context'];
      for (const context of Array.isArray(local) ? local : [local]) {
        if (typeof context === 'string')
          throw badRequest('remote_context', 'remote @context references are not supported; give the context inline');
        if (!isJsonObject(context)) continue;
        inScope += Object.keys(context).length;
        contextTerms += inScope;
      }
      if (contextTerms > limits.contextTerms) {
        throw badRequest(
          'context_too_large',
          'the contexts of this body define too many terms to process: each @context counts the terms it defines ' +
            `and those of the contexts around it, more than ${limits.contextTerms} in all`,
        );
      }
    }
    for (const [key, child] of Object.entries(node)) {
      if (key === '__proto__') throw badRequest('forbidden_key', 'a JSON key "__proto__" is not accepted');
      if (key === '@import')
        throw badRequest('remote_context', '@import is not supported: remote contexts are never fetched');
      stack.push([child, depth + 1, inScope]);
    }
  }
}

/** Reads the JSON-LD documents the fast reader leaves to jsonld.js (`JsonLdFallback`, or a caller's share of it). */
export interface JsonLdReader {
  toQuads(text: string, options: ReadOptions): Promise<Quad[]>;
}

export interface ParseOptions extends ReadOptions {
  /**
   * Where documents outside the fast path's subset go to jsonld.js: the server passes its worker
   * (off the request thread, with a time budget); without one (tools, tests) jsonld.js runs here.
   */
  jsonLd?: JsonLdReader;
}

function checkIri(iri: string, limits: Limits): void {
  if (iri.length > limits.iriLength)
    throw badRequest('iri_too_long', `an IRI is longer than ${limits.iriLength} characters`);
  if (!isValidIri(iri))
    throw badRequest('invalid_iri', `not a valid absolute IRI: ${JSON.stringify(iri.slice(0, 200))}`);
  // `cargo:x` left as an absolute IRI means the client forgot to define the prefix; stored as is,
  // our own output (whose context defines it) would read back as a different IRI.
  const scheme = iri.slice(0, iri.indexOf(':'));
  if (Object.hasOwn(OUTPUT_CONTEXT, scheme)) {
    throw badRequest(
      'undefined_prefix',
      `${JSON.stringify(iri.slice(0, 200))} uses the prefix ${scheme}: without defining it in @context`,
    );
  }
}

/**
 * Half of a UTF-16 surrogate pair without the other half. Only an escape makes one (JSON `\ud800`;
 * Turtle's parser refuses its own): it is no character, and the store would keep U+FFFD instead.
 */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Checks the limits and literals of every body, whatever its syntax. */
function checkQuads(quads: Quad[], limits: Limits): Quad[] {
  if (quads.length > limits.triples) throw tooManyTriples(limits);
  for (const q of quads) {
    if (q.graph.termType !== 'DefaultGraph') throw badRequest('named_graph', 'named graphs are not accepted in a body');
    for (const term of [q.subject, q.predicate, q.object]) {
      if (LONE_SURROGATE.test(term.value) || (term.termType === 'Literal' && LONE_SURROGATE.test(term.language))) {
        throw badRequest('invalid_unicode', 'the body escapes a lone UTF-16 surrogate (such as \\ud800): no character');
      }
      if (term.termType === 'NamedNode') checkIri(term.value, limits);
      else if (term.termType === 'Literal' && !term.language) checkIri(term.datatype.value, limits);
    }
    const o = q.object;
    if (o.termType === 'Literal' && !isWellTyped(o.value, o.datatype.value))
      throw illTypedLiteral(o.value, o.datatype.value, q.predicate.value);
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
  if (typeof document !== 'object' || document === null)
    throw badRequest('invalid_jsonld', 'a JSON-LD body must be an object or an array');
  checkBeforeExpansion(document, options.limits);
  // The common shapes take a hand-written path that gives jsonld.js's quads exactly; anything
  // else (and everything jsonld.js would refuse) goes to jsonld.js.
  const fast = fastJsonLdToQuads(document, options.limits.triples);
  if (fast) {
    if (fast.statements > options.limits.triples) throw tooManyTriples(options.limits);
    return fast.quads;
  }
  const read = { base: options.base, limits: options.limits };
  return options.jsonLd ? options.jsonLd.toQuads(text, read) : jsonLdToQuads(document, read);
}

function parseTurtle(text: string, options: ParseOptions): Quad[] {
  try {
    return distinct(new Parser({ baseIRI: options.base, format: 'text/turtle' }).parse(text));
  } catch (err) {
    throw badRequest('invalid_turtle', `body is not valid Turtle: ${(err as Error).message}`);
  }
}

/**
 * A body is a set of triples: one Turtle states twice counts once, as in JSON-LD (jsonld.js and
 * the fast path merge repeated values), so what a write keeps in memory is what the store holds.
 */
function distinct(quads: Quad[]): Quad[] {
  const seen = new Set<string>();
  return quads.filter((q) => {
    const key = tripleKey(q);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** Parses a request body into quads without fetching anything, within the configured limits. */
export async function parseBody(body: Buffer, format: BodyFormat, options: ParseOptions): Promise<Quad[]> {
  if (body.length === 0) throw badRequest('empty_body', 'the request body is empty');
  let text: string;
  try {
    // A UTF-8 byte order mark is legal in front of a body but not valid JSON: the decoder drops it.
    text = UTF8.decode(body);
  } catch {
    throw badRequest('invalid_utf8', 'the request body is not valid UTF-8');
  }
  const quads = format === 'jsonld' ? await parseJsonLd(text, options) : parseTurtle(text, options);
  return checkQuads(quads, options.limits);
}
