import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import jsonld from 'jsonld';
import type { Limits } from '../config.js';
import { HttpError, badRequest } from '../errors.js';
import { jsonLdJsNumberLiteral, numberLiteral } from './json-numbers.js';
import { blankNode, defaultGraph, literal, namedNode, quad, type Quad, type Term } from './terms.js';
import { xsd } from './vocab.js';

/**
 * jsonld.js (safe mode) reading a JSON-LD document into quads: the reference the fast path is
 * checked against, and the fallback for documents outside the fast path's subset (run off the
 * request thread by `JsonLdFallback`).
 */

/**
 * jsonld.js's resolver of contexts (its `contextResolver` option, which its types leave out), one per
 * document: its default cache, shared by every call, keeps each context's warnings and can raise one
 * for a later document under another context, which safe mode turns into a wrongful refusal.
 */
type ContextResolver = new (options: { sharedCache: Map<string, unknown> }) => object;
const ContextResolver = createRequire(import.meta.url)('jsonld/lib/ContextResolver.js') as ContextResolver;

/** A term as jsonld.js's toRDF gives it: plain data, so it can cross a thread boundary. */
export interface JsonLdTerm {
  termType: string;
  value: string;
  datatype?: { value: string };
  language?: string;
}
export interface JsonLdQuad {
  subject: JsonLdTerm;
  predicate: JsonLdTerm;
  object: JsonLdTerm;
  graph: JsonLdTerm;
}

export interface ReadOptions {
  /** Absolute IRI that relative references resolve against (always set: see jsonld prototype-pollution note). */
  base: string;
  limits: Limits;
}

export const tooManyTriples = (limits: Limits) =>
  badRequest('too_many_triples', `the body expands to more than ${limits.triples} triples`);

/** Remote documents are never fetched. */
const refuseRemoteDocuments = (url: string): never => {
  throw badRequest('remote_context', `remote document ${url} is not fetched; give contexts inline`);
};

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
      // Other keywords (@id, @value, @language, @index, @direction) make no triple; @value may hold JSON and is not
      // entered.
    }
  }
  return count;
}

/**
 * Stands in for xsd:double while jsonld.js turns the expanded form into triples: jsonld.js re-reads
 * every xsd:double value as a number and rewrites it, so values whose literal is decided here go
 * through under this datatype and get xsd:double back afterwards. No client can name it.
 */
const DOUBLE_STAND_IN = `urn:uuid:${randomUUID()}`;

/**
 * Gives the value objects of an expanded document the literals JSON-LD's rules give them where
 * jsonld.js would write others (json-numbers.ts): numbers it misreads or rounds, and xsd:double
 * strings, which stay as written.
 */
function correctLiterals(expanded: unknown): void {
  const stack: unknown[] = [expanded];
  while (stack.length > 0) {
    const element = stack.pop();
    if (typeof element !== 'object' || element === null) continue;
    if (Array.isArray(element)) {
      for (const item of element) stack.push(item);
      continue;
    }
    const node = element as Record<string, unknown>;
    if (!Object.hasOwn(node, '@value')) {
      for (const value of Object.values(node)) stack.push(value);
      continue;
    }
    const value = node['@value'];
    const datatype = typeof node['@type'] === 'string' ? node['@type'] : undefined;
    if (typeof value === 'number' && datatype !== '@json') {
      const wanted = numberLiteral(value, datatype);
      const given = jsonLdJsNumberLiteral(value, datatype);
      if (wanted.lexical !== given.lexical || wanted.datatype !== given.datatype) {
        node['@value'] = wanted.lexical;
        node['@type'] = wanted.datatype === xsd.double ? DOUBLE_STAND_IN : wanted.datatype;
      }
    } else if (typeof value === 'string' && datatype === xsd.double) {
      node['@type'] = DOUBLE_STAND_IN;
    }
  }
}

/** jsonld.js's reading of a document that passed parse.ts's checks, as plain data. */
export async function jsonLdToRawQuads(document: unknown, options: ReadOptions): Promise<JsonLdQuad[]> {
  const jsonLdOptions = {
    base: options.base,
    documentLoader: refuseRemoteDocuments,
    safe: true,
    contextResolver: new ContextResolver({ sharedCache: new Map() }),
  };
  try {
    // Expansion is linear; turning the expanded form into triples is quadratic in the values
    // of one property (jsonld.js de-duplicates by scanning), so the count is checked in between.
    const expanded = await jsonld.expand(document as jsonld.JsonLdDocument, jsonLdOptions as jsonld.Options.Expand);
    if (countStatements(expanded) > options.limits.triples) throw tooManyTriples(options.limits);
    correctLiterals(expanded);
    const quads = (await jsonld.toRDF(expanded, {
      ...jsonLdOptions,
      skipExpansion: true,
    } as jsonld.Options.ToRdf)) as unknown as JsonLdQuad[];
    for (const { object } of quads) if (object.datatype?.value === DOUBLE_STAND_IN) object.datatype.value = xsd.double;
    return quads;
  } catch (err) {
    if (err instanceof HttpError) throw err;
    const details = (err as { details?: { cause?: unknown; event?: { message?: string; details?: unknown } } }).details;
    if (details?.cause instanceof HttpError) throw details.cause;
    // Safe mode reports what it refused (a relative @id, a term without mapping, ...) in an event.
    const why = details?.event
      ? `${details.event.message} ${JSON.stringify(details.event.details ?? {}).slice(0, 300)}`
      : (err as Error).message;
    throw badRequest('invalid_jsonld', `body is not valid JSON-LD: ${why}`);
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

export function fromRawQuads(raw: readonly JsonLdQuad[]): Quad[] {
  return raw.map((q) =>
    quad(
      toTerm(q.subject) as Quad['subject'],
      toTerm(q.predicate) as Quad['predicate'],
      toTerm(q.object) as Quad['object'],
      toTerm(q.graph) as Quad['graph'],
    ),
  );
}

/** jsonld.js's reading on the calling thread. */
export async function jsonLdToQuads(document: unknown, options: ReadOptions): Promise<Quad[]> {
  return fromRawQuads(await jsonLdToRawQuads(document, options));
}
