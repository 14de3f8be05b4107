import { numberLiteral } from './json-numbers.js';
import { blankNode, literal, namedNode, quad, type Quad, type Term } from './terms.js';
import { rdf, xsd } from './vocab.js';

/**
 * A hand-written JSON-LD to RDF conversion for the documents clients actually send (node objects with
 * inline contexts of prefixes and simple terms), faster than jsonld.js (scripts/bench/jsonld-parse.ts).
 * jsonld.js (as `jsonld-reference.ts` runs it) stays the reference: what is accepted here gives exactly
 * its quads, order and blank node labels, so its steps are mirrored ("as jsonld.js"), and anything else
 * returns undefined for jsonld.js to handle.
 */

/** The quads, and the statements before de-duplication (what the triple limit counts). */
export interface FastJsonLdResult {
  quads: Quad[];
  statements: number;
}

/** Thrown to leave the fast path; never escapes this module. */
class OutsideSubset {}
const OUTSIDE = new OutsideSubset();
/** Thrown to stop once the statements pass the limit; never escapes this module. */
const TOO_MANY = new OutsideSubset();
const outside = (): never => {
  throw OUTSIDE;
};

interface TermDefinition {
  id: string;
  /** Whether `term:suffix` expands through this term (jsonld.js `_prefix`). */
  prefix: boolean;
  /** Type coercion: '@id', '@vocab' or a datatype IRI. */
  type?: string;
  /** A language of its own; null: explicitly none. */
  language?: string | null;
}

interface Context {
  terms: Map<string, TermDefinition>;
  vocab?: string;
  language?: string;
  /** Expansions already made with this (finished) context: a document repeats its keys and prefixes. */
  iris: { vocab: Map<string, string>; id: Map<string, string> };
}

type Json = Record<string, unknown>;

const newContext = (from?: Context): Context => ({
  terms: new Map(from?.terms),
  vocab: from?.vocab,
  language: from?.language,
  iris: { vocab: new Map(), id: new Map() },
});
/** jsonld.js's test for an absolute IRI or blank node identifier (url.js); `+-.` is a range. */
const ABSOLUTE_IRI = /^([A-Za-z][A-Za-z0-9+-.]*|_):[^\s]*$/;
const WHITE_SPACE = /\s/;
const BCP47 = /^[a-zA-Z]{1,8}(-[a-zA-Z0-9]{1,8})*$/;
/** A simple term whose IRI ends with one of these can be used as a prefix (JSON-LD 1.1). */
const GEN_DELIM_END = /[:/?#[\]@]$/;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const isBlank = (id: string) => id.startsWith('_:');

/** Declares the definitions of a local context's terms on demand (dependencies first). */
type DefineHook = (name: string) => void;

/**
 * jsonld.js's IRI expansion (context.js `_expandIri`) where relative IRIs are out of the subset:
 * they would resolve against the base, which this path does not do. Always absolute or undefined.
 */
function expandIri(ctx: Context, value: string, vocab: boolean, define?: DefineHook): string | undefined {
  if (value.startsWith('@')) return undefined; // keywords, reserved or not
  define?.(value);
  if (vocab) {
    const term = ctx.terms.get(value);
    if (term) return term.id;
  }
  const colon = value.indexOf(':');
  if (colon > 0) {
    const prefix = value.slice(0, colon);
    const suffix = value.slice(colon + 1);
    if (prefix === '_' || suffix.startsWith('//')) return absolute(value);
    define?.(prefix);
    const term = ctx.terms.get(prefix);
    if (term?.prefix) return withSuffix(term.id, suffix);
    if (ABSOLUTE_IRI.test(value)) return value;
  }
  if (vocab && ctx.vocab !== undefined) return withSuffix(ctx.vocab, value);
  return undefined;
}

/** expandIri with a context that is no longer being defined, once per value. */
function expandKnown(ctx: Context, value: string, vocab: boolean): string | undefined {
  const cache = vocab ? ctx.iris.vocab : ctx.iris.id;
  let iri = cache.get(value);
  if (iri === undefined) {
    iri = expandIri(ctx, value, vocab);
    if (iri !== undefined) cache.set(value, iri);
  }
  return iri;
}

const absolute = (iri: string) => (ABSOLUTE_IRI.test(iri) ? iri : undefined);
/** An absolute IRI extended by a suffix stays one unless the suffix holds white space. */
const withSuffix = (iri: string, suffix: string) => (WHITE_SPACE.test(suffix) ? undefined : iri + suffix);

function languageTag(value: unknown): string {
  if (typeof value !== 'string' || !BCP47.test(value)) outside();
  return (value as string).toLowerCase();
}

/** jsonld.js context processing (context.js `process`) for inline objects of the subset. */
function processContext(active: Context, local: unknown): Context {
  let ctx = active;
  for (const entry of Array.isArray(local) ? local : [local]) {
    if (!isObject(entry)) outside();
    ctx = processLocalContext(ctx, entry as Json);
  }
  return ctx;
}

function processLocalContext(active: Context, local: Json): Context {
  const ctx = newContext(active);
  if ('@version' in local && local['@version'] !== 1.1) outside();
  if ('@vocab' in local) {
    const value = local['@vocab'];
    if (value === null) ctx.vocab = undefined;
    else if (typeof value === 'string') ctx.vocab = expandIri(ctx, value, true) ?? outside();
    else outside();
  }
  if ('@language' in local) ctx.language = local['@language'] === null ? undefined : languageTag(local['@language']);

  const state = new Map<string, 'defining' | 'defined'>();
  const define: DefineHook = (name) => {
    if (Object.hasOwn(local, name)) defineTerm(name);
  };
  const expand = (value: string) => expandIri(ctx, value, true, define);

  function defineTerm(term: string): void {
    const progress = state.get(term);
    if (progress === 'defined') return;
    if (progress === 'defining') outside(); // a cycle: jsonld.js refuses it
    state.set(term, 'defining');
    if (term === '' || term.startsWith('@')) outside();
    ctx.terms.delete(term);

    const raw = local[term];
    const simple = typeof raw === 'string';
    if (!simple && !isObject(raw)) outside(); // null (a dropped term), numbers, arrays
    const body: Json = simple ? { '@id': raw } : (raw as Json);
    for (const key of Object.keys(body)) if (key !== '@id' && key !== '@type' && key !== '@language') outside();

    let id: string | undefined;
    if ('@id' in body) {
      const explicit = body['@id'];
      // A term that looks like an IRI must expand to its own @id: not checked here.
      if (typeof explicit !== 'string' || explicit === term || /[:/]/.test(term)) outside();
      id = expand(explicit as string);
    } else {
      const colon = term.indexOf(':');
      if (colon > 0) {
        const prefix = term.slice(0, colon);
        define(prefix);
        const parent = ctx.terms.get(prefix);
        id = absolute(parent ? parent.id + term.slice(colon + 1) : term);
      } else if (ctx.vocab !== undefined) {
        id = absolute(ctx.vocab + term);
      }
    }
    if (id === undefined) outside();
    const definition: TermDefinition = { id: id!, prefix: simple && GEN_DELIM_END.test(id!) };
    // As jsonld.js: the IRI mapping is in place before the type is expanded (which may use it).
    ctx.terms.set(term, definition);
    state.set(term, 'defined');

    if ('@type' in body) {
      const type = body['@type'];
      if (typeof type !== 'string') outside();
      if (type === '@id' || type === '@vocab') definition.type = type as string;
      else definition.type = datatypeIri(expand(type as string));
    } else if ('@language' in body) {
      definition.language = body['@language'] === null ? null : languageTag(body['@language']);
    }
  }

  for (const key of Object.keys(local)) {
    if (key === '@version' || key === '@vocab' || key === '@language') continue;
    defineTerm(key); // other keywords (@base, @protected, @propagate, ...) are refused there
  }
  return ctx;
}

/** A datatype must be an IRI: jsonld.js refuses blank node identifiers there. */
function datatypeIri(iri: string | undefined): string {
  if (iri === undefined || isBlank(iri)) outside();
  return iri!;
}

/**
 * The literal of a value (toRdf.js `_objectToRDF`), numbers by JSON-LD's rule (`json-numbers.ts`,
 * where jsonld.js parts from it), strings as written whatever their datatype (jsonld.js re-reads
 * an xsd:double string as a number, which turns "INF" into "NaN").
 */
function literalTerm(
  value: string | number | boolean,
  datatype: string | undefined,
  language: string | undefined,
): Term {
  if (typeof value === 'boolean') return literal(String(value), namedNode(datatype ?? xsd.boolean));
  if (typeof value === 'number') {
    // For a safe integer String() is the text numberLiteral writes, sooner.
    if (Number.isSafeInteger(value) && datatype !== xsd.double)
      return literal(String(value), namedNode(datatype ?? xsd.integer));
    const { lexical, datatype: type } = numberLiteral(value, datatype);
    return literal(lexical, namedNode(type));
  }
  if (language !== undefined) return literal(value, language);
  return literal(value, namedNode(datatype ?? xsd.string));
}

/** A node object with its keys expanded and its id issued, values not yet visited. */
interface ExpandedNode {
  ctx: Context;
  id: string;
  types: string[];
  byProperty: Map<string, [string, unknown][]>;
}

/**
 * What jsonld.js compares to drop a repeated value of a property (util.js `compareValues`): the
 * id of a node, or a literal's JSON @value (with ===), @type and @language.
 */
interface ValueKey {
  id?: string;
  value?: string | number | boolean;
  datatype?: string;
  language?: string;
}

const sameValue = (a: ValueKey, b: ValueKey) =>
  a.id !== undefined
    ? a.id === b.id
    : b.id === undefined && a.value === b.value && a.datatype === b.datatype && a.language === b.language;
/** Datatypes and languages hold no spaces, so the last two fields are always theirs. */
const keyText = (k: ValueKey) =>
  k.id !== undefined ? `@id ${k.id}` : `${typeof k.value} ${String(k.value)} ${k.datatype ?? ''} ${k.language ?? ''}`;

/** The values of one property of one node without repeats: compared one by one while few, hashed once many. */
class PropertyValues {
  readonly objects: Term[] = [];
  private readonly keys: ValueKey[] = [];
  private index?: Set<string>;

  add(object: Term, key: ValueKey): void {
    if (this.index) {
      const text = keyText(key);
      if (this.index.has(text)) return;
      this.index.add(text);
    } else {
      if (this.keys.some((k) => sameValue(k, key))) return;
      this.keys.push(key);
      if (this.keys.length > 16) this.index = new Set(this.keys.map(keyText));
    }
    this.objects.push(object);
  }
}

/** One node of the node map: its types and property values, de-duplicated as jsonld.js does. */
interface NodeEntry {
  /** In the order first seen, as jsonld.js keeps them. */
  types: Set<string>;
  properties: Map<string, PropertyValues>;
  /** Whether the properties went in sorted (a node described once), so need no sort on the way out. */
  sorted: boolean;
  last?: string;
}

/** Expands one document into jsonld.js's node map, blank nodes labelled in jsonld.js's order. */
class NodeMapBuilder {
  readonly nodes = new Map<string, NodeEntry>();
  statements = 0;
  private readonly labels = new Map<string, string>();
  private issued = 0;

  /** Stops as soon as the statements pass `maxStatements`: the body is refused whatever follows. */
  constructor(private readonly maxStatements: number) {}

  private count(statements: number): void {
    this.statements += statements;
    if (this.statements > this.maxStatements) throw TOO_MANY;
  }

  /** jsonld.js's IdentifierIssuer('_:b'): each document label keeps the first new label it got. */
  private issue(label?: string): string {
    const known = label === undefined ? undefined : this.labels.get(label);
    if (known) return known;
    const id = `_:b${this.issued++}`;
    if (label !== undefined) this.labels.set(label, id);
    return id;
  }

  private entry(id: string): NodeEntry {
    let node = this.nodes.get(id);
    if (!node) {
      node = { types: new Set(), properties: new Map(), sorted: true };
      this.nodes.set(id, node);
    }
    return node;
  }

  /** A top-level node: jsonld.js drops (and safe mode refuses) one without any statement. */
  topLevel(ctx: Context, element: unknown): void {
    if (element === null) return; // skipped without a word by jsonld.js
    if (!isObject(element)) outside(); // free-floating scalars, nested arrays
    this.fill(this.expand(ctx, element as Json, true));
  }

  /**
   * Expands a node object's keys and issues its id: what jsonld.js knows of a node when it adds
   * a reference to it, before it goes through the node's values.
   */
  expand(active: Context, element: Json, topLevel: boolean): ExpandedNode {
    const ctx = '@context' in element ? processContext(active, element['@context']) : active;
    let explicitId: string | undefined;
    let types: string[] = [];
    const byProperty = new Map<string, [string, unknown][]>();
    for (const key of Object.keys(element)) {
      const value = element[key];
      if (key === '@context') continue;
      if (key === '@id') {
        if (typeof value !== 'string') outside();
        explicitId = expandKnown(ctx, value as string, false) ?? outside();
      } else if (key === '@type') {
        types = (Array.isArray(value) ? value : [value]).map((t) => {
          if (typeof t !== 'string') outside();
          const type = expandKnown(ctx, t as string, true);
          if (type === undefined || isBlank(type)) outside();
          return type!;
        });
      } else if (key.startsWith('@')) {
        outside(); // @graph, @reverse, @included, @nest, @index, @value in a node, ...
      } else {
        const property = expandKnown(ctx, key, true);
        if (property === undefined || isBlank(property)) outside();
        if (value === null) continue; // dropped by jsonld.js, no statement
        const values = byProperty.get(property!);
        if (values) values.push([key, value]);
        else byProperty.set(property!, [[key, value]]);
      }
    }
    if (topLevel) {
      const count = (explicitId === undefined ? 0 : 1) + (types.length > 0 ? 1 : 0) + byProperty.size;
      if (count === 0 || (count === 1 && explicitId !== undefined)) outside();
    }
    const id = explicitId === undefined ? this.issue() : isBlank(explicitId) ? this.issue(explicitId) : explicitId;
    return { ctx, id, types, byProperty };
  }

  /** Adds an expanded node's types and values to the map, nested nodes depth first. */
  fill({ ctx, id, types, byProperty }: ExpandedNode): void {
    const node = this.entry(id);
    this.count(types.length);
    for (const type of types) node.types.add(type);

    for (const property of [...byProperty.keys()].sort()) {
      let values = node.properties.get(property);
      if (!values) {
        values = new PropertyValues();
        node.properties.set(property, values);
        if (node.last !== undefined && property < node.last) node.sorted = false;
        node.last = property;
      }
      const entries = byProperty.get(property)!;
      // jsonld.js's expansion adds the values of keys expanding to one property in key order.
      if (entries.length > 1) entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      for (const [key, value] of entries) {
        const definition = ctx.terms.get(key);
        for (const item of Array.isArray(value) ? value : [value]) {
          if (item === null) continue;
          this.count(1);
          if (Array.isArray(item)) outside();
          // As jsonld.js: the reference goes in before the nested node's own values.
          const nested = isObject(item) && !('@value' in item) ? this.expand(ctx, item, false) : undefined;
          const [object, key] = nested ? this.reference(nested.id) : this.object(ctx, definition, item);
          values.add(object, key);
          if (nested) this.fill(nested);
        }
      }
    }
  }

  /** A value that is not a nested node, as an RDF term, with what jsonld.js compares to de-duplicate values. */
  private object(ctx: Context, definition: TermDefinition | undefined, item: unknown): [Term, ValueKey] {
    if (isObject(item)) return valueObject(ctx, item);
    const coercion = definition?.type;
    if (typeof item === 'string' && (coercion === '@id' || coercion === '@vocab')) {
      const iri = expandKnown(ctx, item, coercion === '@vocab') ?? outside();
      const id = isBlank(iri) ? this.issue(iri) : iri;
      this.entry(id); // jsonld.js adds every referenced node to the map, even with nothing said about it
      return this.reference(id);
    }
    const datatype = coercion === '@id' || coercion === '@vocab' ? undefined : coercion;
    let language: string | undefined;
    if (typeof item === 'string' && datatype === undefined) {
      language = definition?.language === undefined ? ctx.language : (definition.language ?? undefined);
    }
    return scalar(item as string | number | boolean, datatype, language);
  }

  private reference(id: string): [Term, ValueKey] {
    return [isBlank(id) ? blankNode(id.slice(2)) : namedNode(id), { id }];
  }

  /** The quads, as jsonld.js emits them: subjects sorted, then properties sorted (rdf:type first). */
  quads(): Quad[] {
    const quads: Quad[] = [];
    const type = namedNode(rdf.type);
    for (const id of [...this.nodes.keys()].sort()) {
      const node = this.nodes.get(id)!;
      const subject = isBlank(id) ? blankNode(id.slice(2)) : namedNode(id);
      for (const t of node.types) quads.push(quad(subject, type, namedNode(t)));
      const properties = node.sorted ? node.properties.keys() : [...node.properties.keys()].sort();
      for (const property of properties) {
        const predicate = namedNode(property);
        for (const object of node.properties.get(property)!.objects)
          quads.push(quad(subject, predicate, object as Quad['object']));
      }
    }
    return quads;
  }
}

function scalar(
  value: string | number | boolean,
  datatype: string | undefined,
  language: string | undefined,
): [Term, ValueKey] {
  if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') outside();
  return [literalTerm(value, datatype, language), { value, datatype, language }];
}

/** {"@value", "@type"} or {"@value", "@language"}. */
function valueObject(ctx: Context, item: Json): [Term, ValueKey] {
  let datatype: string | undefined;
  let language: string | undefined;
  for (const key of Object.keys(item)) {
    if (key === '@type') {
      if (typeof item[key] !== 'string') outside();
      datatype = datatypeIri(expandKnown(ctx, item[key] as string, true));
    } else if (key === '@language') {
      if (item[key] !== null) language = languageTag(item[key]);
    } else if (key !== '@value') {
      outside();
    }
  }
  const value = item['@value'];
  if (datatype !== undefined && language !== undefined) outside();
  if (language !== undefined && typeof value !== 'string') outside();
  return scalar(value as string, datatype, language); // null, objects, arrays: outside
}

/**
 * The quads of a parsed JSON-LD document, or undefined when it is outside the subset handled
 * here (jsonld.js then decides). The document has passed parse.ts's checks (depth, remote
 * contexts, context size, "__proto__" keys) first. Past `maxStatements` it stops and answers
 * no quads with a statement count over the limit.
 */
export function fastJsonLdToQuads(document: unknown, maxStatements = Infinity): FastJsonLdResult | undefined {
  const builder = new NodeMapBuilder(maxStatements);
  try {
    const initial = newContext();
    if (Array.isArray(document)) {
      for (const element of document) builder.topLevel(initial, element);
    } else if (isObject(document)) {
      const keys = Object.keys(document).filter((k) => k !== '@context');
      if (keys.length === 1 && keys[0] === '@graph') {
        // {"@context", "@graph"}: jsonld.js reads the graph's nodes as top-level nodes.
        const ctx = '@context' in document ? processContext(initial, document['@context']) : initial;
        const graph = document['@graph'];
        if (!isObject(graph) && !Array.isArray(graph)) return undefined;
        for (const element of Array.isArray(graph) ? graph : [graph]) builder.topLevel(ctx, element);
      } else {
        builder.topLevel(initial, document);
      }
    } else {
      return undefined;
    }
    return { quads: builder.quads(), statements: builder.statements };
  } catch (err) {
    if (err === OUTSIDE) return undefined;
    if (err === TOO_MANY) return { quads: [], statements: builder.statements };
    throw err;
  }
}
