import { readStoreNTriples } from '../../rdf/ntriples.js';
import { dateTimeLiteral, iriToNt, literal, namedNode, xsdLiteral, type Quad } from '../../rdf/terms.js';
import { STORE, api, store as meta, xsd } from '../../rdf/vocab.js';
import { annotatedGraphQuads } from './annotated-graph.js';

/*
 * Notifications this server received on POST /notifications: one named graph per notification,
 * holding the notification as received (blank nodes named) and, on the graph's own IRI, what
 * the receiver noted: who sent it, when, its arrival number and the Idempotency-Key it came with.
 * The commit that receives one finishes its graph (WriteTransaction.finished): it goes to the
 * archive, never to the hot store (docs/notifications.md).
 */

/** What the server notes about a received notification; its content is in its graph. */
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
export const isReceivedNotificationGraph = (graph: string) => graph.startsWith(GRAPH_PREFIX);

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

/**
 * The record of a received notification from its graph's N-Triples (the store's own, one triple a
 * line): only the lines of the receipt and of the notification node are parsed, not a Logistics
 * Object the notification may carry. Undefined if the receipt is incomplete.
 */
export function receivedNotificationFromNTriples(
  graph: string,
  ntriples: string,
): ReceivedNotificationRecord | undefined {
  const receipt = `${iriToNt(graph)} `;
  const lines = ntriples.split('\n');
  const about = new Map(
    readStoreNTriples(lines.filter((l) => l.startsWith(receipt)).join('\n')).map((t) => [
      t.predicate.value,
      t.object.value,
    ]),
  );
  const iri = about.get(meta.receivedNotification);
  const sender = about.get(meta.receivedFrom);
  const at = about.get(meta.receivedAt);
  const sequence = about.get(meta.receivedSequence);
  if (iri === undefined || sender === undefined || at === undefined || sequence === undefined) return undefined;
  const node = `${iriToNt(iri)} `;
  const own = new Map(
    readStoreNTriples(lines.filter((l) => l.startsWith(node)).join('\n')).map((t) => [
      t.predicate.value,
      t.object.value,
    ]),
  );
  const eventType = own.get(api.hasEventType);
  if (eventType === undefined) return undefined;
  const key = about.get(meta.idempotencyKey);
  const object = own.get(api.hasLogisticsObject);
  return {
    iri,
    graph,
    sender,
    receivedAt: new Date(at),
    sequence: Number(sequence),
    ...(key === undefined ? {} : { idempotencyKey: key }),
    eventType,
    ...(object === undefined ? {} : { object }),
  };
}
