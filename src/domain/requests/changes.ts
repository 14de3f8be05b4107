import { HttpError, badRequest, type ErrorDetail } from '../../errors.js';
import { isValidIri, literal, namedNode, quad, xsdLiteral, type Quad, type RDF, type Term } from '../../rdf/terms.js';
import {
  groupBySubject,
  rdfTermKey,
  reachable,
  termKey,
  termsKey,
  tripleKey,
  valueKey,
  type NodeTriples,
} from '../../rdf/triples.js';
import {
  API,
  CODE_LISTS,
  INTERNAL_SCHEME,
  OUTPUT_CONTEXT,
  RDF as RDF_NS,
  RDFS,
  XSD,
  api,
  cargo,
  rdf,
  xsd,
} from '../../rdf/vocab.js';
import { illTypedLiteral, isWellTyped, isXsdDatatype } from '../../rdf/xsd-lexical.js';

/** An OperationObject as the client wrote it (kept verbatim in the stored Change). */
export interface OperationValue {
  datatype: string;
  value: string;
}

/** What an operation's object stands for once read. */
export type OperationTarget =
  | { kind: 'term'; term: RDF.NamedNode | RDF.Literal }
  /** A new embedded object: a `_:label` whose hasDatatype is a class that is not a Logistics Object. */
  | { kind: 'new'; label: string; type: string };

export interface Operation {
  op: 'ADD' | 'DELETE';
  /** As written: the Logistics Object IRI, an `internal:` id or a `_:label`. */
  s: string;
  p: string;
  o: OperationValue[];
  targets: OperationTarget[];
}

export interface Change {
  object: string;
  revision: number;
  description?: string;
  notify: boolean;
  operations: Operation[];
}

export interface ChangeContext {
  /** IRI of the Logistics Object the PATCH addresses. */
  object: string;
  objectsPrefix: string;
  isLogisticsObjectClass: (iri: string) => boolean;
  /** Whether the cargo ontology has this class. */
  isClass: (iri: string) => boolean;
  /** Whether a Logistics Object of this server exists. */
  exists: (iri: string) => boolean;
}

/** The "datatype" under which a plain link (an `{ "@id" }` object) is stored in a Change. */
const LINK_DATATYPE = `${RDFS}Resource`;
const OP_NAMES = new Map<string, 'ADD' | 'DELETE'>([
  [api.ADD, 'ADD'],
  ['ADD', 'ADD'],
  ['api:ADD', 'ADD'],
  [api.DELETE, 'DELETE'],
  ['DELETE', 'DELETE'],
  ['api:DELETE', 'DELETE'],
]);
/** Properties a Change may not touch: events are linked by the events endpoint, revisions by the server. */
const FORBIDDEN_PROPERTIES = new Map<string, string>([
  [api.hasLogisticsEvent, 'Logistics Events cannot be linked with PATCH; POST them to the events endpoint'],
  [cargo.events, 'Logistics Events cannot be linked with PATCH; POST them to the events endpoint'],
  [api.hasRevision, 'the revision is managed by the server'],
  [api.hasLatestRevision, 'the revision is managed by the server'],
]);
const isLabel = (value: string) => value.startsWith('_:') && value.length > 2;

/** Quads grouped by subject, with helpers that read one property strictly. */
class Nodes {
  private readonly bySubject: Map<string, Quad[]>;

  constructor(quads: Quad[]) {
    this.bySubject = groupBySubject(quads);
  }

  subjectsWith(predicate: string): Term[] {
    const out: Term[] = [];
    for (const list of this.bySubject.values())
      if (list.some((q) => q.predicate.value === predicate)) out.push(list[0].subject);
    return out;
  }

  has(node: Term): boolean {
    return this.bySubject.has(termKey(node));
  }

  values(node: Term, predicate: string): Term[] {
    return (this.bySubject.get(termKey(node)) ?? [])
      .filter((q) => q.predicate.value === predicate)
      .map((q) => q.object);
  }

  /** The single value of a property as text; 400 if absent (when required) or repeated. */
  text(node: Term, predicate: string, what: string, required: true): string;
  text(node: Term, predicate: string, what: string, required: false): string | undefined;
  text(node: Term, predicate: string, what: string, required: boolean): string | undefined {
    const values = this.values(node, predicate);
    if (values.length === 0) {
      if (required) throw badRequest('invalid_change', `${what} is missing`, predicate);
      return undefined;
    }
    if (values.length > 1)
      throw badRequest('invalid_change', `${what} must have one value, not ${values.length}`, predicate);
    if (values[0].termType === 'BlankNode')
      throw badRequest('invalid_change', `${what} must be a string or an IRI, not a node`, predicate);
    return values[0].value;
  }
}

function literalTarget(datatype: string, value: string, property: string): OperationTarget {
  if (datatype === rdf.langString)
    throw badRequest(
      'invalid_operation',
      'rdf:langString values cannot be given in an OperationObject (it has no language)',
      api.hasDatatype,
    );
  if (datatype.startsWith(XSD) && !isXsdDatatype(datatype))
    throw badRequest('unknown_datatype', `hasDatatype ${datatype} is not an XSD datatype`, api.hasDatatype);
  if (!isWellTyped(value, datatype)) throw illTypedLiteral(value, datatype, property);
  return { kind: 'term', term: literal(value, namedNode(datatype)) };
}

/** A class a non-literal hasDatatype may name: of the cargo ontology, the code lists or the API ontology. */
const isKnownClass = (iri: string, ctx: ChangeContext) =>
  ctx.isClass(iri) || iri.startsWith(CODE_LISTS) || iri.startsWith(API);

/** `xsd:double` written as a plain string (not coerced by the client's context) means the XSD IRI. */
function expandDatatype(datatype: string): string {
  const prefix = datatype.slice(0, datatype.indexOf(':'));
  return Object.hasOwn(OUTPUT_CONTEXT, prefix)
    ? OUTPUT_CONTEXT[prefix as keyof typeof OUTPUT_CONTEXT] + datatype.slice(prefix.length + 1)
    : datatype;
}

function readTarget(
  value: OperationValue,
  op: 'ADD' | 'DELETE',
  property: string,
  ctx: ChangeContext,
): OperationTarget {
  if (!isValidIri(value.datatype))
    throw badRequest(
      'invalid_operation',
      `hasDatatype must be an IRI, not ${JSON.stringify(value.datatype.slice(0, 100))}`,
      api.hasDatatype,
    );
  if (value.datatype.startsWith(XSD) || value.datatype.startsWith(RDF_NS))
    return literalTarget(value.datatype, value.value, property);
  if (value.datatype !== LINK_DATATYPE && !isKnownClass(value.datatype, ctx)) {
    throw badRequest(
      'unknown_datatype',
      `hasDatatype ${value.datatype} is neither an XSD datatype nor a class of the ONE Record ontologies`,
      api.hasDatatype,
    );
  }
  if (isLabel(value.value)) {
    if (ctx.isLogisticsObjectClass(value.datatype)) {
      throw badRequest(
        'creates_logistics_object',
        `PATCH cannot create Logistics Objects (${value.datatype}); create it first and link it by its URI`,
        api.hasDatatype,
      );
    }
    if (op === 'DELETE')
      throw badRequest(
        'invalid_operation',
        `DELETE cannot refer to a new embedded object (${value.value})`,
        api.hasValue,
      );
    return { kind: 'new', label: value.value, type: value.datatype };
  }
  if (!isValidIri(value.value)) {
    throw badRequest(
      'invalid_operation',
      `the value of a ${value.datatype} must be an IRI or a blank-node label, not ${JSON.stringify(value.value.slice(0, 100))}`,
      api.hasValue,
    );
  }
  if (value.value.startsWith(ctx.objectsPrefix) && !ctx.exists(value.value)) {
    throw badRequest(
      'creates_logistics_object',
      `${value.value} is not a Logistics Object of this server; PATCH can only link existing ones`,
      api.hasValue,
    );
  }
  return { kind: 'term', term: namedNode(value.value) };
}

function readValues(nodes: Nodes, operation: Term): OperationValue[] {
  const out: OperationValue[] = [];
  for (const o of nodes.values(operation, api.o)) {
    if (o.termType === 'Literal') {
      out.push({ datatype: o.datatype.value === rdf.langString ? xsd.string : o.datatype.value, value: o.value });
    } else if (nodes.has(o)) {
      const datatype = nodes.text(o, api.hasDatatype, 'hasDatatype of an OperationObject', false);
      out.push({
        datatype: datatype === undefined ? xsd.string : expandDatatype(datatype),
        value: nodes.text(o, api.hasValue, 'hasValue of an OperationObject', true),
      });
    } else if (o.termType === 'NamedNode') {
      out.push({ datatype: LINK_DATATYPE, value: o.value });
    } else {
      throw badRequest(
        'invalid_operation',
        'an operation object must be an OperationObject, a string or an IRI',
        api.o,
      );
    }
  }
  if (out.length === 0) throw badRequest('invalid_operation', 'an operation needs at least one object (api:o)', api.o);
  return out;
}

function readOperation(nodes: Nodes, node: Term, ctx: ChangeContext): Operation {
  if (!nodes.has(node))
    throw badRequest(
      'invalid_operation',
      'each hasOperation must be an api:Operation with op, s, p and o',
      api.hasOperation,
    );
  const opName = nodes.text(node, api.op, 'op of an Operation', true);
  const op = OP_NAMES.get(opName);
  if (!op)
    throw badRequest(
      'invalid_operation',
      `unknown operation ${JSON.stringify(opName.slice(0, 100))}; only ADD and DELETE exist`,
      api.op,
    );
  const s = nodes.text(node, api.s, 's of an Operation', true);
  if (!isLabel(s) && s !== ctx.object && !(s.startsWith(INTERNAL_SCHEME) && isValidIri(s))) {
    throw badRequest(
      'foreign_subject',
      `s must be ${ctx.object}, one of its internal: embedded objects or a _:label; PATCH cannot change or create other objects`,
      api.s,
    );
  }
  const p = nodes.text(node, api.p, 'p of an Operation', true);
  if (!isValidIri(p))
    throw badRequest('invalid_operation', `p must be a property IRI, not ${JSON.stringify(p.slice(0, 100))}`, api.p);
  const forbidden = FORBIDDEN_PROPERTIES.get(p);
  if (forbidden) throw badRequest('forbidden_property', `${p} cannot be changed: ${forbidden}`, p);
  const o = readValues(nodes, node);
  return { op, s, p, o, targets: o.map((v) => readTarget(v, op, p, ctx)) };
}

function checkLabels(operations: Operation[]): void {
  const types = new Map<string, string>();
  for (const operation of operations) {
    for (const t of operation.targets) {
      if (t.kind !== 'new') continue;
      if ((types.get(t.label) ?? t.type) !== t.type)
        throw badRequest('invalid_operation', `${t.label} is given two different classes`, api.hasDatatype);
      types.set(t.label, t.type);
    }
  }
  for (const operation of operations) {
    if (isLabel(operation.s) && !types.has(operation.s)) {
      throw badRequest(
        'unknown_label',
        `${operation.s} is not introduced by an ADD whose hasValue is that label and whose hasDatatype is its class`,
        api.s,
      );
    }
  }
}

/** A PATCH body's Change must say it is one: an api:Change (not an api:ChangeRequest, which only the server makes). */
export function requireChangeType(quads: Quad[]): Quad[] {
  const typed = (type: string) =>
    quads.some(
      (q) =>
        q.predicate.value === rdf.type &&
        q.object.value === type &&
        quads.some((o) => o.subject.equals(q.subject) && o.predicate.value === api.hasOperation),
    );
  if (typed(api.ChangeRequest))
    throw badRequest(
      'invalid_change',
      'a PATCH body is an api:Change; api:ChangeRequests are made by the server',
      rdf.type,
    );
  if (!typed(api.Change))
    throw badRequest(
      'invalid_change',
      'the body is not typed api:Change (an api:Change with at least one hasOperation)',
      rdf.type,
    );
  return quads;
}

/**
 * Reads an api:Change from a request body, or from a stored ChangeRequest graph (same shape,
 * with internal: ids instead of blank nodes). Every problem that does not depend on the
 * object's current state is a 400 here, before any ChangeRequest exists.
 */
export function parseChange(quads: Quad[], ctx: ChangeContext): Change {
  const nodes = new Nodes(quads);
  const changes = nodes.subjectsWith(api.hasOperation);
  if (changes.length !== 1) {
    throw badRequest(
      'invalid_change',
      changes.length === 0
        ? 'the body is not an api:Change with at least one hasOperation'
        : 'the body must hold exactly one api:Change',
      api.hasOperation,
    );
  }
  const change = changes[0];
  const object = nodes.text(change, api.hasLogisticsObject, 'hasLogisticsObject', true);
  if (object !== ctx.object)
    throw badRequest(
      'object_mismatch',
      `hasLogisticsObject ${object} is not the Logistics Object addressed (${ctx.object})`,
      api.hasLogisticsObject,
    );
  const revisionText = nodes.text(change, api.hasRevision, 'hasRevision', true);
  if (!/^\+?0*[1-9]\d{0,8}$/.test(revisionText))
    throw badRequest('invalid_change', 'hasRevision must be a positive integer', api.hasRevision);
  const notifyText = nodes.text(change, api.notifyRequestStatusChange, 'notifyRequestStatusChange', false);
  if (notifyText !== undefined && !isWellTyped(notifyText, xsd.boolean)) {
    throw badRequest('invalid_change', 'notifyRequestStatusChange must be a boolean', api.notifyRequestStatusChange);
  }
  const operations = nodes.values(change, api.hasOperation).map((node) => readOperation(nodes, node, ctx));
  checkLabels(operations);
  return {
    object,
    revision: Number(revisionText),
    description: nodes.text(change, api.hasDescription, 'hasDescription', false),
    notify: notifyText === 'true' || notifyText === '1',
    operations,
  };
}

/**
 * The Change as stored in its ChangeRequest's graph, under `changeIri` (ids derived from it).
 * The types of its nodes follow from the properties that link them and are not stored (see
 * `ActionRequests.representation`).
 */
export function changeQuads(change: Change, changeIri: string): Quad[] {
  const node = namedNode(changeIri);
  const out = [
    quad(node, namedNode(api.hasLogisticsObject), namedNode(change.object)),
    quad(node, namedNode(api.hasRevision), xsdLiteral(change.revision, xsd.positiveInteger)),
    quad(node, namedNode(api.notifyRequestStatusChange), xsdLiteral(change.notify, xsd.boolean)),
  ];
  if (change.description !== undefined)
    out.push(quad(node, namedNode(api.hasDescription), literal(change.description)));
  change.operations.forEach((operation, i) => {
    const opNode = namedNode(`${changeIri}-op-${i + 1}`);
    out.push(
      quad(node, namedNode(api.hasOperation), opNode),
      quad(opNode, namedNode(api.op), namedNode(operation.op === 'ADD' ? api.ADD : api.DELETE)),
      quad(opNode, namedNode(api.s), literal(operation.s)),
      quad(opNode, namedNode(api.p), xsdLiteral(operation.p, xsd.anyURI)),
    );
    operation.o.forEach((value, k) => {
      const valueNode = namedNode(`${opNode.value}-o-${k + 1}`);
      out.push(
        quad(opNode, namedNode(api.o), valueNode),
        quad(valueNode, namedNode(api.hasDatatype), xsdLiteral(value.datatype, xsd.anyURI)),
        quad(valueNode, namedNode(api.hasValue), literal(value.value)),
      );
    });
  });
  return out;
}

/** The literal values of a Change's operations, in order: what `ApplyContext.canonicalLiterals` holds in canonical form. */
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

/**
 * What a change needs of the triples it applies to: each triple by its key, in order, and by
 * subject IRI, predicate and object. `closed`: every subject is reachable from the object through
 * internal: nodes, as a change leaves it (a revision read from the store may hold nodes its
 * creation linked otherwise). Kept for the array a change produced: a revision's triples are read
 * by the next change of the object (the parsed-revision cache hands back the same array), which
 * edits them in place for its own result, so a change costs what it changes, not the object's
 * size. The array it started from loses them then, and builds them again if it is ever changed
 * again (a change that failed, or was not committed). Weak, so they live exactly as long as that
 * cache keeps the array.
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
    let node = this.byNode.get(t.subject.value);
    if (!node) this.byNode.set(t.subject.value, (node = new Map()));
    let values = node.get(t.predicate.value);
    if (!values) node.set(t.predicate.value, (values = new Map()));
    values.set(rdfTermKey(t.object), t);
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

/**
 * Applies a Change to the triples of the current revision: all DELETEs, then all ADDs. Values
 * are compared as RDF values ("20.0"^^xsd:double deletes a stored 20). Deleting an absent
 * triple or adding a present one fails the whole Change (422) and nothing changes. Embedded
 * objects no longer linked from the object lose their triples too. Synchronous on purpose:
 * the caller claims the next revision right after, with nothing in between.
 *
 * The work is the change's, not the object's, when the change adds to nodes the object has and
 * unlinks none: nothing can then become unreachable, so the object's nodes are not walked.
 */
export function applyChange(current: readonly Quad[], change: Change, ctx: ApplyContext): ApplyResult {
  const canonical = ctx.canonicalLiterals;
  let nextLiteral = 0;
  const newNodes = new Map<string, { iri: string; type: string }>();
  for (const operation of change.operations) {
    for (const t of operation.targets)
      if (t.kind === 'new' && !newNodes.has(t.label))
        newNodes.set(t.label, { iri: ctx.newEmbeddedIri(), type: t.type });
  }
  const resolved = change.operations.map((operation) => ({
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

  const keyed = takeKeyed(current);
  const { triples, byNode } = keyed;
  const closedBefore = keyed.closed;
  const nodesBefore = new Set(resolved.map((r) => r.subject.value).filter((s) => byNode.has(s)));
  const removed = new Map<string, Quad>();
  const added = new Map<string, Quad>();
  const add = (key: string, t: Quad) => {
    keyed.add(key, t);
    if (!removed.delete(key)) added.set(key, t);
  };
  const failures: ErrorDetail[] = [];
  const typed = new Set<string>();
  for (const group of ['DELETE', 'ADD'] as const) {
    for (const { operation, subject, objects } of resolved) {
      if (operation.op !== group) continue;
      const predicate = namedNode(operation.p);
      for (const [i, object] of objects.entries()) {
        const key = termsKey(subject, predicate, object);
        const present = triples.get(key);
        if (group === 'DELETE' && !present)
          failures.push({
            message: `DELETE ${describe(operation, i)}: no such value`,
            property: operation.p,
            resource: operation.s,
          });
        if (group === 'ADD' && present)
          failures.push({
            message: `ADD ${describe(operation, i)}: the value is already present`,
            property: operation.p,
            resource: operation.s,
          });
        if (group === 'DELETE') {
          if (present) removed.set(key, present);
          keyed.delete(key);
        } else if (!present) add(key, quad(subject, predicate, object));
        const target = operation.targets[i];
        if (group === 'ADD' && target.kind === 'new' && !typed.has(target.label)) {
          typed.add(target.label);
          const typeTriple = quad(object as RDF.NamedNode, namedNode(rdf.type), namedNode(target.type));
          add(tripleKey(typeTriple), typeTriple);
        }
      }
    }
  }

  const unlinks = [...removed.values()].some((t) => followed(t.object));
  const onKnownNodes = [...added.values()].every((t) => nodesBefore.has(t.subject.value));
  if (!closedBefore || unlinks || !onKnownNodes) {
    // Embedded objects no longer linked from the object (through internal: nodes) are dropped.
    const bySubject = groupBySubject(triples.values(), valueKey);
    const kept = reachable(change.object, bySubject, { keyOf: valueKey, follow: followed });
    for (const { operation, subject } of resolved) {
      if (operation.op === 'ADD' && !kept.has(subject.value)) {
        failures.push({
          message: `ADD on ${operation.s}: it is not part of this Logistics Object`,
          property: operation.p,
          resource: operation.s,
        });
      }
    }
    if (failures.length === 0) {
      for (const [key, t] of triples) {
        if (kept.has(t.subject.value)) continue;
        keyed.delete(key);
        if (!added.delete(key)) removed.set(key, t);
      }
    }
  }
  if (
    [...removed.values()].some((t) => t.subject.value === change.object && t.predicate.value === rdf.type) ||
    !closedBefore
  ) {
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
  const result = [...triples.values()];
  keyed.closed = true;
  KEYED_TRIPLES.set(result, keyed);
  return { ok: true, triples: result, added: [...added.values()], removed: [...removed.values()], byNode };
}

function describe(operation: Operation, i: number): string {
  const value = operation.o[i];
  return `${operation.s} ${operation.p} ${JSON.stringify(value.value.slice(0, 200))} (${value.datatype})`;
}
