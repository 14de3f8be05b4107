import { dateTimeLiteral, iriToNt, literal, namedNode, xsdLiteral, type Quad } from '../../rdf/terms.js';
import { STORE, api, store as meta, xsd } from '../../rdf/vocab.js';
import type { SparqlReader } from '../graph-store.js';
import { annotatedGraphQuads } from './annotated-graph.js';

/*
 * Notifications this server received on POST /notifications: one named graph per notification,
 * holding the notification as received (blank nodes named) and, on the graph's own IRI, what
 * the receiver noted: who sent it, when, its arrival number and the Idempotency-Key it came with.
 */

/** What the server keeps in memory about a received notification; its content stays in the store. */
export interface ReceivedNotificationRecord {
  /** The notification's @id as sent, or the `internal:` id given to one sent without. */
  iri: string;
  /** Named graph holding it. */
  graph: string;
  /** Logistics agent of the sender's token. */
  sender: string;
  receivedAt: Date;
  /** Arrival order on this server. */
  sequence: number;
  idempotencyKey?: string;
  eventType: string;
  object?: string;
}

const GRAPH_PREFIX = `${STORE}notification:`;
export const receivedNotificationGraph = (id: string) => `${GRAPH_PREFIX}${id}`;

/** The graph of one received notification: its triples (any graph) plus the receipt. */
export function receivedNotificationQuads(record: ReceivedNotificationRecord, triples: readonly Quad[]): Quad[] {
  return annotatedGraphQuads(record.graph, triples, [
    [meta.receivedFrom, namedNode(record.sender)],
    [meta.receivedAt, dateTimeLiteral(record.receivedAt)],
    [meta.receivedSequence, xsdLiteral(record.sequence, xsd.integer)],
    [meta.receivedNotification, namedNode(record.iri)],
    record.idempotencyKey === undefined ? undefined : [meta.idempotencyKey, literal(record.idempotencyKey)],
  ]);
}

/** Every received notification, in arrival order. */
export function readReceivedNotifications(reader: SparqlReader): ReceivedNotificationRecord[] {
  const p = iriToNt;
  const rows = reader.select(`SELECT ?g ?n ?from ?at ?seq ?key ?type ?lo WHERE { GRAPH ?g {
    ?g ${p(meta.receivedFrom)} ?from ; ${p(meta.receivedAt)} ?at ; ${p(meta.receivedSequence)} ?seq ; ${p(meta.receivedNotification)} ?n .
    ?n ${p(api.hasEventType)} ?type .
    OPTIONAL { ?g ${p(meta.idempotencyKey)} ?key }
    OPTIONAL { ?n ${p(api.hasLogisticsObject)} ?lo } } }`);
  return rows.results.bindings
    .map((b) => ({
      iri: b.n.value,
      graph: b.g.value,
      sender: b.from.value,
      receivedAt: new Date(b.at.value),
      sequence: Number(b.seq.value),
      ...(b.key ? { idempotencyKey: b.key.value } : {}),
      eventType: b.type.value,
      ...(b.lo ? { object: b.lo.value } : {}),
    }))
    .sort((a, b) => a.sequence - b.sequence);
}
