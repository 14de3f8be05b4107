import { HttpError, type ErrorDetail } from '../../errors.js';
import { entryOf } from '../../map-entry.js';
import { namedNode, quad, type Quad, type RDF, type Term } from '../../rdf/terms.js';
import {
  groupBySubject,
  rdfTermKey,
  reachable,
  termsKey,
  tripleKey,
  valueKey,
  type NodeTriples,
} from '../../rdf/triples.js';
import { INTERNAL_SCHEME, rdf } from '../../rdf/vocab.js';
import { isLabel, type Change, type Operation } from './changes.js';

/**
 * The literal values of a Change's operations, in order: what `ApplyContext.canonicalLiterals` holds in canonical form.
 */
export function changeLiterals(change: Change): RDF.Literal[] {
  const literals: RDF.Literal[] = [];
  for (const operation of change.operations)
    for (const t of operation.targets) if (t.kind === 'term' && t.term.termType === 'Literal') literals.push(t.term);
  return literals;
}

export interface ApplyContext {
  object: string;
  isLogisticsObjectClass: (iri: string) => boolean;
  /** The change's literals (`changeLiterals`) as the store keeps them (StoreReader.canonicalLiterals). */
  canonicalLiterals: readonly RDF.Literal[];
  newEmbeddedIri: () => string;
}

/**
 * The new revision's triples, and how they differ from the current ones (`removed`: triples of the
 * current revision, as stored; `added`: in the store's canonical form): what the store writes.
 * `byNode`: the new triples by subject IRI, for shape checks of what the change touched.
 */
export type ApplyResult =
  | { ok: true; triples: Quad[]; added: Quad[]; removed: Quad[]; byNode: ReadonlyMap<string, NodeTriples> }
  | { ok: false; error: HttpError };

const newMap = <K, V>() => new Map<K, V>();

/**
 * A change's triples by key, in order, and by subject, predicate and object, kept weakly for the array a change
 * produced: the next change gets that array from the parsed-revision cache and edits it in place (the array it
 * started from loses them), so a change costs what it changes, not the object's size. `closed`: every subject is
 * reachable from the object through internal: nodes.
 */
class KeyedTriples {
  readonly triples = new Map<string, Quad>();
  readonly byNode = new Map<string, Map<string, Map<string, Quad>>>();
  closed = false;

  constructor(triples: readonly Quad[]) {
    for (const t of triples) this.add(tripleKey(t), t);
  }

  add(key: string, t: Quad): void {
    this.triples.set(key, t);
    const node = entryOf(this.byNode, t.subject.value, newMap<string, Map<string, Quad>>);
    entryOf(node, t.predicate.value, newMap<string, Quad>).set(rdfTermKey(t.object), t);
  }

  delete(key: string): void {
    const t = this.triples.get(key);
    if (!t) return;
    this.triples.delete(key);
    // Empty maps go, so that a node is there exactly when it has triples.
    const node = this.byNode.get(t.subject.value)!;
    const values = node.get(t.predicate.value)!;
    values.delete(rdfTermKey(t.object));
    if (values.size > 0) return;
    node.delete(t.predicate.value);
    if (node.size === 0) this.byNode.delete(t.subject.value);
  }
}
const KEYED_TRIPLES = new WeakMap<readonly Quad[], KeyedTriples>();

/** The keyed triples of `triples`, taken from it: the caller edits them into those of another array. */
function takeKeyed(triples: readonly Quad[]): KeyedTriples {
  const keyed = KEYED_TRIPLES.get(triples) ?? new KeyedTriples(triples);
  KEYED_TRIPLES.delete(triples);
  return keyed;
}

const followed = (o: Term) => o.termType === 'NamedNode' && o.value.startsWith(INTERNAL_SCHEME);

/** An operation with its subject and objects as terms of the new revision. */
interface ResolvedOperation {
  operation: Operation;
  subject: RDF.NamedNode;
  objects: (RDF.NamedNode | RDF.Literal)[];
}

/** The operations with each `_:label` as a new embedded object's IRI and each literal in its canonical form. */
function resolveOperations(change: Change, ctx: ApplyContext): ResolvedOperation[] {
  const canonical = ctx.canonicalLiterals;
  let nextLiteral = 0;
  const newNodes = new Map<string, { iri: string; type: string }>();
  for (const operation of change.operations) {
    for (const t of operation.targets)
      if (t.kind === 'new' && !newNodes.has(t.label))
        newNodes.set(t.label, { iri: ctx.newEmbeddedIri(), type: t.type });
  }
  return change.operations.map((operation) => ({
    operation,
    subject: namedNode(isLabel(operation.s) ? newNodes.get(operation.s)!.iri : operation.s),
    objects: operation.targets.map((t) =>
      t.kind === 'new'
        ? namedNode(newNodes.get(t.label)!.iri)
        : t.term.termType === 'Literal'
          ? canonical[nextLiteral++]
          : t.term,
    ),
  }));
}

/** The triples a change edits, with what it removed from and added to the current revision, and why it fails. */
class Edits {
  readonly removed = new Map<string, Quad>();
  readonly added = new Map<string, Quad>();
  readonly failures: ErrorDetail[] = [];

  constructor(readonly keyed: KeyedTriples) {}

  add(key: string, t: Quad): void {
    this.keyed.add(key, t);
    if (!this.removed.delete(key)) this.added.set(key, t);
  }

  fail(operation: Operation, message: string): void {
    this.failures.push({ message, property: operation.p, resource: operation.s });
  }
}

/** All DELETEs, then all ADDs; each ADD of a new embedded object adds its type once. */
function applyOperations(resolved: readonly ResolvedOperation[], edits: Edits): void {
  const { triples } = edits.keyed;
  const typed = new Set<string>();
  for (const group of ['DELETE', 'ADD'] as const) {
    for (const { operation, subject, objects } of resolved) {
      if (operation.op !== group) continue;
      const predicate = namedNode(operation.p);
      for (const [i, object] of objects.entries()) {
        const key = termsKey(subject, predicate, object);
        const present = triples.get(key);
        if (group === 'DELETE') {
          if (!present) edits.fail(operation, `DELETE ${describe(operation, i)}: no such value`);
          else edits.removed.set(key, present);
          edits.keyed.delete(key);
          continue;
        }
        if (present) edits.fail(operation, `ADD ${describe(operation, i)}: the value is already present`);
        else edits.add(key, quad(subject, predicate, object));
        const target = operation.targets[i];
        if (target.kind === 'new' && !typed.has(target.label)) {
          typed.add(target.label);
          const typeTriple = quad(object as RDF.NamedNode, namedNode(rdf.type), namedNode(target.type));
          edits.add(tripleKey(typeTriple), typeTriple);
        }
      }
    }
  }
}

/**
 * Drops the embedded objects no longer linked from `object` (through internal: nodes); an ADD on a
 * node that is not part of the object fails the change.
 */
function dropUnlinked(object: string, resolved: readonly ResolvedOperation[], edits: Edits): void {
  const { triples } = edits.keyed;
  const bySubject = groupBySubject(triples.values(), valueKey);
  const kept = reachable(object, bySubject, { keyOf: valueKey, follow: followed });
  for (const { operation, subject } of resolved) {
    if (operation.op === 'ADD' && !kept.has(subject.value))
      edits.fail(operation, `ADD on ${operation.s}: it is not part of this Logistics Object`);
  }
  if (edits.failures.length > 0) return;
  for (const [key, t] of triples) {
    if (kept.has(t.subject.value)) continue;
    edits.keyed.delete(key);
    if (!edits.added.delete(key)) edits.removed.set(key, t);
  }
}

/**
 * Applies a Change: all DELETEs, then all ADDs, values compared as RDF values; a missing delete or a present add
 * fails the whole Change (422) and changes nothing (ONE Record API, "PATCH /logistics-objects/<logistics_object_id>").
 * Unlinked embedded objects lose their triples. Synchronous, so the caller claims the next revision with nothing
 * in between; a change that only adds to existing nodes skips the reachability walk.
 */
export function applyChange(current: readonly Quad[], change: Change, ctx: ApplyContext): ApplyResult {
  const resolved = resolveOperations(change, ctx);
  const keyed = takeKeyed(current);
  const { byNode } = keyed;
  const closedBefore = keyed.closed;
  const nodesBefore = new Set(resolved.map((r) => r.subject.value).filter((s) => byNode.has(s)));
  const edits = new Edits(keyed);
  applyOperations(resolved, edits);
  const { added, removed, failures } = edits;
  const unlinks = [...removed.values()].some((t) => followed(t.object));
  const onKnownNodes = [...added.values()].every((t) => nodesBefore.has(t.subject.value));
  if (!closedBefore || unlinks || !onKnownNodes) dropUnlinked(change.object, resolved, edits);
  const retyped = [...removed.values()].some(
    (t) => t.subject.value === change.object && t.predicate.value === rdf.type,
  );
  if (retyped || !closedBefore) {
    const types = [...(byNode.get(change.object)?.get(rdf.type)?.values() ?? [])].map((t) => t.object.value);
    if (!types.some((t) => ctx.isLogisticsObjectClass(t))) {
      failures.push({
        message: 'the Logistics Object would no longer have a Logistics Object type',
        property: rdf.type,
        resource: change.object,
      });
    }
  }
  if (failures.length > 0) return { ok: false, error: new HttpError(422, 'change_failed', failures) };
  const result = [...keyed.triples.values()];
  keyed.closed = true;
  KEYED_TRIPLES.set(result, keyed);
  return { ok: true, triples: result, added: [...added.values()], removed: [...removed.values()], byNode };
}

function describe(operation: Operation, i: number): string {
  const value = operation.o[i];
  return `${operation.s} ${operation.p} ${JSON.stringify(value.value.slice(0, 200))} (${value.datatype})`;
}
