import { badRequest } from '../../errors.js';
import { isValidIri, literal, namedNode, quad, xsdLiteral, type Quad, type RDF, type Term } from '../../rdf/terms.js';
import { groupBySubject, termKey } from '../../rdf/triples.js';
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
/** A `_:label`: a new embedded object the Change introduces. */
export const isLabel = (value: string) => value.startsWith('_:') && value.length > 2;

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
      `the value of a ${value.datatype} must be an IRI or a blank-node label, ` +
        `not ${JSON.stringify(value.value.slice(0, 100))}`,
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
      `s must be ${ctx.object}, one of its internal: embedded objects or a _:label; ` +
        'PATCH cannot change or create other objects',
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
