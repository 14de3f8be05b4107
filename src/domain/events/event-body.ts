import { badRequest } from '../../errors.js';
import type { CargoOntology } from '../../rdf/ontology.js';
import {
  dateTimeLiteral,
  defaultGraph,
  isValidIri,
  literal,
  namedNode,
  quad,
  type Quad,
  type RDF,
  type Term,
} from '../../rdf/terms.js';
import { CARGO, CODE_LISTS, EVENT_TIME_TYPES, INTERNAL_SCHEME, cargo, rdf, xsd } from '../../rdf/vocab.js';
import { groupBySubject, reachable, termKey as key } from '../../rdf/triples.js';
import { newEmbeddedIri, newObjectIri } from '../objects/new-objects.js';

/** One event node of a request body with the nodes it holds, not yet assigned to an object. */
export interface EventDraft {
  node: Quad['subject'];
  /** Triples of the event node and of every node reachable from it. */
  triples: Quad[];
  /** Its cargo:eventFor values. */
  targets: Term[];
}

/** An event checked and ready to be stored for one Logistics Object. */
export interface PreparedEvent {
  iri: string;
  /** The @id is the client's own: it may be taken already. A generated one (a random UUID) never is. */
  idChosenByClient: boolean;
  object: string;
  /** Default-graph triples: the event as stored, with eventFor and creationDate set. */
  triples: Quad[];
  creationDate: number;
  eventDate: number;
  /** Code-list IRIs and short codes of cargo:eventCode, for filtering. */
  codes: string[];
}

export interface PrepareContext {
  /** `{base}/logistics-objects/`: linked objects of this server may not be described in an event. */
  objectsPrefix: string;
  now: Date;
}

const EVENT_ID = /^[A-Za-z0-9._~-]{1,200}$/;
const XSD_DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|[+-](\d{2}):(\d{2}))?$/;
const CODE_LIST_NAME = /^[A-Za-z][A-Za-z0-9_]*$/;

const isEmbedded = (t: Term) =>
  t.termType === 'BlankNode' || (t.termType === 'NamedNode' && t.value.startsWith(INTERNAL_SCHEME));

export const eventsPrefixOf = (objectIri: string) => `${objectIri}/logistics-events/`;

/**
 * Finds the Logistics Events of a body: every node whose type is cargo:LogisticsEvent or a
 * subclass. Throws (for the whole body) when there is none, or when a node belongs to none.
 */
export function eventsInBody(triples: Quad[], ontology: CargoOntology): EventDraft[] {
  const bySubject = groupBySubject(triples);
  const isEvent = (k: string) =>
    (bySubject.get(k) ?? []).some(
      (t) => t.predicate.value === rdf.type && ontology.isLogisticsEventClass(t.object.value),
    );
  const eventKeys = [...bySubject.keys()].filter(isEvent);
  if (eventKeys.length === 0) {
    throw badRequest(
      'not_a_logistics_event',
      'the body holds no node whose @type is cargo:LogisticsEvent or a subclass of it',
      rdf.type,
    );
  }
  const claimed = new Set<string>();
  const drafts = eventKeys.map((k) => {
    const nodes = reachable(k, bySubject, { follow: (_, child) => !isEvent(child) });
    for (const n of nodes) claimed.add(n);
    const own = bySubject.get(k)!;
    return {
      node: own[0].subject,
      triples: [...nodes].flatMap((n) => bySubject.get(n)!),
      targets: own.filter((t) => t.predicate.value === cargo.eventFor).map((t) => t.object),
    };
  });
  for (const k of bySubject.keys()) {
    if (!claimed.has(k))
      throw badRequest(
        'disconnected_node',
        `node ${k.split(':').slice(1).join(':')} is not part of any Logistics Event in the body`,
      );
  }
  return drafts;
}

/** Epoch milliseconds of an xsd:dateTime lexical form (UTC when it has no zone), or undefined. */
export function parseXsdDateTime(lexical: string): number | undefined {
  const m = XSD_DATE_TIME.exec(lexical);
  if (!m) return undefined;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number);
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, second, m[7] ? Math.floor(Number(`0${m[7]}`) * 1000) : 0);
  // Date rolls over out-of-range parts (February 30 becomes March 2); a real date does not.
  if (date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day || hour > 23 || minute > 59 || second > 59)
    return undefined;
  const offset = m[9] ? (m[8].startsWith('-') ? -1 : 1) * (Number(m[9]) * 60 + Number(m[10])) : 0;
  if (Math.abs(offset) > 14 * 60) return undefined;
  return date.getTime() - offset * 60_000;
}

function valuesOf(own: Quad[], property: string): Term[] {
  return own.filter((t) => t.predicate.value === property).map((t) => t.object);
}

function atMostOne(own: Quad[], property: string, name: string): Term | undefined {
  const values = valuesOf(own, property);
  if (values.length > 1)
    throw badRequest('too_many_values', `${name} takes one value, the event has ${values.length}`, property);
  return values[0];
}

/** A date property as a typed xsd:dateTime literal; a plain string in date-time form is accepted. */
function dateValue(term: Term, property: string, name: string): { ms: number; literal: RDF.Literal } {
  const typed =
    term.termType === 'Literal' && (term.datatype.value === xsd.dateTime || term.datatype.value === xsd.string);
  const ms = typed ? parseXsdDateTime(term.value) : undefined;
  if (ms === undefined)
    throw badRequest('invalid_date', `${name} must be an xsd:dateTime such as 2024-05-01T10:00:00Z`, property);
  return { ms, literal: literal(term.value, namedNode(xsd.dateTime)) };
}

/** cargo:ACTUAL etc.; also accepts the string forms `ACTUAL` and `cargo:ACTUAL` that 2.x examples show. */
function eventTimeType(term: Term): RDF.NamedNode {
  let iri: string | undefined;
  if (term.termType === 'NamedNode') iri = term.value;
  else if (term.termType === 'Literal')
    iri = term.value.startsWith('cargo:')
      ? CARGO + term.value.slice('cargo:'.length)
      : term.value.includes(':')
        ? term.value
        : CARGO + term.value;
  if (iri === undefined || !EVENT_TIME_TYPES.includes(iri)) {
    throw badRequest(
      'invalid_event_time_type',
      `eventTimeType must be one of ${EVENT_TIME_TYPES.map((t) => t.slice(CARGO.length)).join(', ')}`,
      cargo.eventTimeType,
    );
  }
  return namedNode(iri);
}

function codeListIri(value: string): string | undefined {
  if (isValidIri(value)) return value.replace(/[#/]$/, '');
  return CODE_LIST_NAME.test(value) ? CODE_LISTS + value : undefined;
}

/**
 * The names of cargo:eventCode for filtering. A code-list IRI (`…/StatusCode#DEP`) names
 * itself; an embedded CodeListElement gives its `code`, and with a `codeListReference` or
 * `codeListName` also the IRI `{list}#{code}`.
 */
function eventCodes(code: Term, bySubject: Map<string, Quad[]>): string[] {
  if (code.termType === 'Literal') {
    throw badRequest(
      'invalid_event_code',
      'eventCode must be a code-list IRI ({"@id": …}) or a CodeListElement node, not a string',
      cargo.eventCode,
    );
  }
  const props = bySubject.get(key(code)) ?? [];
  const shortCodes = valuesOf(props, cargo.code)
    .filter((t) => t.termType === 'Literal')
    .map((t) => t.value);
  if (!isEmbedded(code)) return [...new Set([code.value, ...shortCodes])];
  const lists = [...valuesOf(props, cargo.codeListReference), ...valuesOf(props, cargo.codeListName)]
    .filter((t) => t.termType !== 'BlankNode')
    .map((t) => codeListIri(t.value))
    .filter((iri): iri is string => iri !== undefined);
  return [...new Set([...shortCodes, ...lists.flatMap((list) => shortCodes.map((c) => `${list}#${c}`))])];
}

/**
 * A generated id, or the client's own when it lies under the object's events path (whether it is taken is the caller's
 * check).
 */
function eventIri(node: Term, eventsPrefix: string): string {
  if (isEmbedded(node)) return newObjectIri(eventsPrefix);
  const id = node.value.startsWith(eventsPrefix) ? node.value.slice(eventsPrefix.length) : '';
  if (!EVENT_ID.test(id))
    throw badRequest(
      'foreign_id',
      `@id ${node.value} is not of the form ${eventsPrefix}<id>; leave it out to get a generated one`,
    );
  return node.value;
}

/**
 * Checks one event for one Logistics Object and builds what is stored: the server sets
 * eventFor (to that object only) and, when absent, creationDate; embedded nodes get fresh
 * `internal:` ids; links to other Logistics Objects of this server carry at most their type.
 */
export function prepareEvent(draft: EventDraft, object: string, ctx: PrepareContext): PreparedEvent {
  const eventKey = key(draft.node);
  const bySubject = groupBySubject(draft.triples);
  const own = bySubject.get(eventKey)!;
  const eventDateTerm = atMostOne(own, cargo.eventDate, 'eventDate');
  if (!eventDateTerm)
    throw badRequest('missing_event_date', 'eventDate is required on every Logistics Event', cargo.eventDate);
  const eventDate = dateValue(eventDateTerm, cargo.eventDate, 'eventDate');
  const creationTerm = atMostOne(own, cargo.creationDate, 'creationDate');
  const creation = creationTerm
    ? dateValue(creationTerm, cargo.creationDate, 'creationDate')
    : { ms: ctx.now.getTime(), literal: dateTimeLiteral(ctx.now) };
  const timeTypeTerm = atMostOne(own, cargo.eventTimeType, 'eventTimeType');
  const timeType = timeTypeTerm && eventTimeType(timeTypeTerm);
  const codeTerm = atMostOne(own, cargo.eventCode, 'eventCode');
  const codes = codeTerm ? eventCodes(codeTerm, bySubject) : [];
  const iri = eventIri(draft.node, eventsPrefixOf(object));

  const renamed = new Map<string, Term>([[eventKey, namedNode(iri)]]);
  const rename = (t: Term): Term => {
    if (t.termType === 'Literal' || !isEmbedded(t)) return t;
    let fresh = renamed.get(key(t));
    if (!fresh) {
      fresh = namedNode(newEmbeddedIri());
      renamed.set(key(t), fresh);
    }
    return fresh;
  };
  const replaced: Record<string, Quad['object'] | undefined> = {
    [cargo.creationDate]: creation.literal,
    [cargo.eventDate]: eventDate.literal,
    [cargo.eventTimeType]: timeType,
  };
  const subject = namedNode(iri);
  const stored: Quad[] = [quad(subject, namedNode(cargo.eventFor), namedNode(object), defaultGraph())];
  if (!creationTerm) stored.push(quad(subject, namedNode(cargo.creationDate), creation.literal, defaultGraph()));
  for (const t of draft.triples) {
    const isEventNode = key(t.subject) === eventKey;
    if (isEventNode && t.predicate.value === cargo.eventFor) continue;
    if (!isEventNode && t.subject.value.startsWith(ctx.objectsPrefix) && t.predicate.value !== rdf.type) {
      throw badRequest(
        'linked_object_properties',
        `${t.subject.value} is a Logistics Object of this server: an event may link it, not describe it`,
        t.predicate.value,
      );
    }
    const value =
      isEventNode && Object.hasOwn(replaced, t.predicate.value) ? replaced[t.predicate.value]! : rename(t.object);
    stored.push(quad(rename(t.subject) as Quad['subject'], t.predicate, value as Quad['object'], defaultGraph()));
  }
  // eventFor now names `object` only: drop what only the other targets of a bulk event held.
  const kept = reachable(key(subject), groupBySubject(stored));
  return {
    iri,
    idChosenByClient: !isEmbedded(draft.node),
    object,
    triples: stored.filter((t) => kept.has(key(t.subject))),
    creationDate: creation.ms,
    eventDate: eventDate.ms,
    codes,
  };
}
