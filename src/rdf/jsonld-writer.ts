import type { Quad, Term } from './terms.js';
import { API, CARGO, OUTPUT_CONTEXT, XSD, rdf, xsd } from './vocab.js';
import { groupBySubject, valueKey } from './triples.js';

const PREFIXES: [string, string][] = [
  [CARGO, 'cargo:'],
  [API, 'api:'],
  [XSD, 'xsd:'],
];
const LOCAL_NAME = /^[A-Za-z_][A-Za-z0-9_.-]*$/;
// No "-0": JSON has no negative zero, so it would read back as "0".
const CANONICAL_INTEGER = /^(0|-?[1-9][0-9]{0,14})$/;

/** `cargo:Piece` for a vocabulary IRI with a known prefix, else the IRI itself. */
export function compactIri(iri: string): string {
  for (const [ns, prefix] of PREFIXES) {
    if (iri.startsWith(ns) && LOCAL_NAME.test(iri.slice(ns.length))) return prefix + iri.slice(ns.length);
  }
  return iri;
}

type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
type JsonObject = { [key: string]: JsonValue };

function literalValue(term: Term & { termType: 'Literal' }): JsonValue {
  if (term.language) return { '@value': term.value, '@language': term.language };
  const datatype = term.datatype.value;
  if (datatype === xsd.string) return term.value;
  if (datatype === xsd.boolean && (term.value === 'true' || term.value === 'false')) return term.value === 'true';
  if (datatype === xsd.integer && CANONICAL_INTEGER.test(term.value)) return Number(term.value);
  return { '@value': term.value, '@type': compactIri(datatype) };
}

/** Graph data of one node to be written, with what the server adds to it. */
export interface NodeDocument {
  iri: string;
  triples: readonly Quad[];
  /** Server-managed numbers shown as api:hasRevision / api:hasLatestRevision. */
  revision?: { number: number; latest: number };
}

export interface WriteOptions {
  /** Linked objects to inline (embedded=true), by IRI; they are inlined one level deep. */
  inline?: ReadonlyMap<string, NodeDocument>;
  /** Rewrites IRIs of linked Logistics Objects (adds `?at=`). */
  linkIri?: (iri: string) => string;
}

/**
 * Writes the nodes of one document. Each node's properties are written once, at its first
 * occurrence; later references (shared embedded nodes, cycles) are `{ "@id" }` only, so the
 * output stays linear in the number of triples however the nodes are linked.
 */
class NodeWriter {
  private readonly bySubject: Map<string, Quad[]>;
  private readonly emitted = new Set<string>();

  constructor(
    triples: readonly Quad[],
    private readonly options: WriteOptions,
    private readonly inlineDepth: number,
    /** Linked objects already inlined anywhere in the response. */
    private readonly inlined: Set<string>,
  ) {
    this.bySubject = groupBySubject(triples, valueKey);
  }

  private link(iri: string): string {
    return this.options.linkIri ? this.options.linkIri(iri) : iri;
  }

  private objectValue(term: Term): JsonValue {
    if (term.termType === 'Literal') return literalValue(term);
    const iri = term.value;
    const inlined = this.inlineDepth === 0 ? this.options.inline?.get(iri) : undefined;
    if (inlined && !this.inlined.has(iri)) {
      this.inlined.add(iri);
      return writeNode(inlined, this.options, 1, this.inlined);
    }
    if (this.bySubject.has(iri) && !this.emitted.has(iri)) return this.node(iri, false);
    return { '@id': this.link(iri) };
  }

  node(iri: string, root: boolean): JsonObject {
    this.emitted.add(iri);
    const out: JsonObject = { '@id': root ? iri : this.link(iri) };
    const types: string[] = [];
    const props = new Map<string, JsonValue[]>();
    for (const t of this.bySubject.get(iri) ?? []) {
      if (t.predicate.value === rdf.type && t.object.termType === 'NamedNode') {
        types.push(compactIri(t.object.value));
        continue;
      }
      const key = compactIri(t.predicate.value);
      const value = this.objectValue(t.object);
      const list = props.get(key);
      if (list) list.push(value);
      else props.set(key, [value]);
    }
    if (types.length > 0) out['@type'] = types.length === 1 ? types[0] : types;
    for (const [key, values] of props) out[key] = values.length === 1 ? values[0] : values;
    return out;
  }

  isEmitted(iri: string): boolean {
    return this.emitted.has(iri);
  }

  /** Nodes that nothing written so far reached. */
  notEmitted(): string[] {
    return [...this.bySubject.keys()].filter((s) => !this.emitted.has(s));
  }
}

function writeNode(doc: NodeDocument, options: WriteOptions, inlineDepth: number, inlined: Set<string>): JsonObject {
  const writer = new NodeWriter(doc.triples, options, inlineDepth, inlined);
  const node = writer.node(doc.iri, true);
  if (inlineDepth > 0 && options.linkIri) node['@id'] = options.linkIri(doc.iri);
  if (doc.revision) {
    node['api:hasRevision'] = doc.revision.number;
    node['api:hasLatestRevision'] = doc.revision.latest;
  }
  // Nodes not reachable from the root (should not happen, but never drop data silently);
  // each is checked again in the loop because an earlier one may have nested it.
  const included: JsonObject[] = [];
  for (const s of writer.notEmitted()) if (!writer.isEmitted(s)) included.push(writer.node(s, false));
  if (included.length > 0) node['@included'] = included;
  return node;
}

/**
 * Compacted, nested JSON-LD of one node and the embedded nodes it holds, with the
 * `{cargo, api, xsd}` context. A hand-written fast path: tests check that jsonld.js reads
 * every output back to exactly the stored triples.
 */
export function writeJsonLd(doc: NodeDocument, options: WriteOptions = {}): string {
  return JSON.stringify({ '@context': OUTPUT_CONTEXT, ...writeJsonLdNode(doc, options) });
}

/** The same node without `@context`, for documents that hold several nodes under one context. */
export function writeJsonLdNode(doc: NodeDocument, options: WriteOptions = {}): JsonObject {
  return writeNode(doc, options, 0, new Set([doc.iri]));
}

/** A plain JSON-LD object with the output context, for resources built in code (errors, collections). */
export function withContext(body: JsonObject): string {
  return JSON.stringify({ '@context': OUTPUT_CONTEXT, ...body });
}

export type { JsonObject, JsonValue };
