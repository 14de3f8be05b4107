import {
  dateTimeLiteral,
  iriToNt,
  literal,
  namedNode,
  quad,
  termToNt,
  xsdLiteral,
  type Quad,
} from '../../rdf/terms.js';
import { STORE, api, store as meta, xsd } from '../../rdf/vocab.js';
import type { GraphReader, SparqlReader } from '../readers.js';
import { annotatedGraphQuads } from './annotated-graph.js';

/*
 * The notification outbox, in three parts:
 * - entries: one per write that notifies anyone, written in the same commit as the change, event
 *   or decision that caused it, whatever the number of its recipients: one quad in a graph of its
 *   own, named by its number, holding what the notification says, the topics it is about and the
 *   recipients named at write time. Which subscriptions receive it follows from the topics and
 *   from when each subscription started (see `notifiedAfter`), so the entry never lists them.
 * - positions (graph `outbox-positions`): per delivery queue, the number of the last entry it has
 *   settled; per subscription, the last entry written before it started; and the number up to
 *   which entries were removed, once every queue was past them.
 * - parked notifications: one graph per notification of one recipient, the notification plus its
 *   queue entry: dead letters, and dead letters replayed until they are delivered again (and
 *   any pending notification a server with the earlier one-graph-per-recipient outbox left).
 */

/** What one notification says (the object's body is added when it is sent). */
export interface NotificationContent {
  eventType: string;
  object?: string;
  objectType?: string;
  revision?: number;
  changed?: readonly string[];
  triggeredBy?: string;
  event?: string;
}

/**
 * Who receives a notification: its FIFO queue (one per subscriber and topic), what it is sent for, where it is POSTed.
 */
export interface Recipient {
  queue: string;
  /**
   * The SubscriptionRequest; for a status notification to the requester of an action request that asked for them, that
   * request.
   */
  subscription: string;
  callback: string;
}

/** The outbox entry of one write. */
export interface OutboxEntry {
  /** Order of queuing on this server (commit order); names the entry's graph. */
  sequence: number;
  /** Base of the @id of its notifications (each recipient's adds a suffix). */
  iri: string;
  queuedAt: Date;
  content: NotificationContent;
  /** The objects it is about, each with its class at the time: subscriptions to either receive it. */
  topics: readonly { object: string; type: string }[];
  /**
   * Recipients named at write time, who would not follow from the topics (a request's own subscriber, its requester).
   */
  addressed: readonly Recipient[];
  /** How many recipients it had when written. */
  recipients: number;
}

const ENTRY_PREFIX = `${STORE}outbox-entry:`;
export const outboxEntryGraph = (sequence: number) => `${ENTRY_PREFIX}${sequence}`;

/** The entry as stored: one quad, the entry as JSON (it is only ever read whole, by its number). */
export function outboxEntryQuads(entry: OutboxEntry): Quad[] {
  const g = namedNode(outboxEntryGraph(entry.sequence));
  const { sequence: _sequence, queuedAt, ...rest } = entry;
  return [
    quad(g, namedNode(meta.outboxEntry), literal(JSON.stringify({ ...rest, queuedAt: queuedAt.toISOString() })), g),
  ];
}

function entryOf(sequence: number, json: string): OutboxEntry {
  const stored = JSON.parse(json) as Omit<OutboxEntry, 'sequence' | 'queuedAt'> & { queuedAt: string };
  return { ...stored, sequence, queuedAt: new Date(stored.queuedAt) };
}

/** Entry number `sequence`, if the store still holds it. */
export async function readOutboxEntry(reader: GraphReader, sequence: number): Promise<OutboxEntry | undefined> {
  const stored = (await reader.graphTriples(outboxEntryGraph(sequence))).find(
    (t) => t.predicate.value === meta.outboxEntry,
  );
  return stored && entryOf(sequence, stored.object.value);
}

/** Every entry the store holds, in queuing order. */
export async function readOutboxEntries(reader: SparqlReader): Promise<OutboxEntry[]> {
  const rows = await reader.select(`SELECT ?g ?entry WHERE { GRAPH ?g { ?g ${iriToNt(meta.outboxEntry)} ?entry } }`);
  // Virtuoso may answer the row of a commit under way without its long literal: not there yet (its
  // commit is published after, from the commit feed).
  return rows.results.bindings
    .filter((b) => b.g && b.entry)
    .map((b) => entryOf(Number(b.g.value.slice(ENTRY_PREFIX.length)), b.entry.value))
    .sort((a, b) => a.sequence - b.sequence);
}

const POSITIONS = namedNode(meta.outboxPositionsGraph);

/**
 * What has a position: a delivery queue, or a group of queues (several processes delivering, each group by one
 * process at a time: its queues without a position of their own stand at the group's).
 */
export type PositionKind = 'queue' | 'group';

/** Queue (or group) `name` has settled every notification of the entries up to number `through`. */
export function queuePositionQuads(name: string, through: number, kind: PositionKind = 'queue'): Quad[] {
  const node = namedNode(`${STORE}outbox-${kind}:${encodeURIComponent(name)}`);
  return [
    quad(node, namedNode(kind === 'queue' ? meta.outboxQueue : meta.outboxGroup), literal(name), POSITIONS),
    quad(node, namedNode(meta.settledThrough), xsdLiteral(through, xsd.integer), POSITIONS),
  ];
}

/** What moves a position from `from` (0: none stored yet) to `to`: the quads to delete and to insert. */
export function movedQueuePosition(
  name: string,
  from: number,
  to: number,
  kind: PositionKind = 'queue',
): { delete: Quad[]; insert: Quad[] } {
  return {
    delete: from > 0 ? queuePositionQuads(name, from, kind).slice(1) : [],
    insert: from > 0 ? queuePositionQuads(name, to, kind).slice(1) : queuePositionQuads(name, to, kind),
  };
}

/**
 * The subscription (its SubscriptionRequest) receives the entries numbered after `after` (those written before it
 * started are not its).
 */
export function notifiedAfterQuad(subscription: string, after: number): Quad {
  return quad(namedNode(subscription), namedNode(meta.notifiedAfter), xsdLiteral(after, xsd.integer), POSITIONS);
}

/** Entries up to number `through` are gone (every queue was past them). */
export const compactedThroughQuad = (through: number): Quad =>
  quad(POSITIONS, namedNode(meta.compactedThrough), xsdLiteral(through, xsd.integer), POSITIONS);

export interface OutboxPositions {
  queues: { queue: string; through: number }[];
  /** The groups' positions (several processes delivering, `delivery-groups.ts`). */
  groups: { group: string; through: number }[];
  subscriptions: { subscription: string; after: number }[];
  compactedThrough: number;
}

export async function readOutboxPositions(reader: SparqlReader): Promise<OutboxPositions> {
  const p = iriToNt;
  const graph = p(meta.outboxPositionsGraph);
  const rows = await reader.select(`SELECT ?s ?queue ?group ?through ?after ?compacted WHERE { GRAPH ${graph} {
    { ?s ${p(meta.outboxQueue)} ?queue ; ${p(meta.settledThrough)} ?through }
    UNION { ?s ${p(meta.outboxGroup)} ?group ; ${p(meta.settledThrough)} ?through }
    UNION { ?s ${p(meta.notifiedAfter)} ?after } UNION { ?s ${p(meta.compactedThrough)} ?compacted } } }`);
  // A queue with two positions (two processes delivering for a moment, each writing its own): the higher one holds.
  const queues = new Map<string, number>();
  const groups = new Map<string, number>();
  const positions: OutboxPositions = { queues: [], groups: [], subscriptions: [], compactedThrough: 0 };
  for (const b of rows.results.bindings) {
    if (b.queue) queues.set(b.queue.value, Math.max(queues.get(b.queue.value) ?? 0, Number(b.through.value)));
    else if (b.group) groups.set(b.group.value, Math.max(groups.get(b.group.value) ?? 0, Number(b.through.value)));
    else if (b.after) positions.subscriptions.push({ subscription: b.s.value, after: Number(b.after.value) });
    else if (b.compacted) positions.compactedThrough = Math.max(positions.compactedThrough, Number(b.compacted.value));
  }
  for (const [queue, through] of queues) positions.queues.push({ queue, through });
  for (const [group, through] of groups) positions.groups.push({ group, through });
  return positions;
}

/** A notification to one recipient kept in a graph of its own: a dead letter, or one replayed. */
export interface ParkedNotification {
  /** The notification's @id, also its Idempotency-Key and webhook-id. */
  iri: string;
  graph: string;
  queue: string;
  /** Number of the entry it came from: FIFO within a queue. */
  sequence: number;
  queuedAt: Date;
  /** See Recipient.subscription. */
  subscription: string;
  callback: string;
  eventType: string;
  object?: string;
  revision?: number;
  triggeredBy?: string;
}

export interface DeadLetter {
  at: Date;
  reason: string;
}

export interface StoredParkedNotification {
  notification: ParkedNotification;
  dead?: DeadLetter;
}

export const parkedGraph = (id: string) => `${STORE}outbox:${id}`;

/** The graph of a parked notification: its triples plus its queue entry. */
export function parkedNotificationQuads(parked: ParkedNotification, notification: readonly Quad[]): Quad[] {
  return annotatedGraphQuads(parked.graph, notification, [
    [meta.outboxNotification, namedNode(parked.iri)],
    [meta.outboxQueue, literal(parked.queue)],
    [meta.outboxSequence, xsdLiteral(parked.sequence, xsd.integer)],
    [meta.queuedAt, dateTimeLiteral(parked.queuedAt)],
    [meta.forSubscription, namedNode(parked.subscription)],
    [meta.callback, literal(parked.callback)],
    parked.revision === undefined ? undefined : [meta.aboutRevision, xsdLiteral(parked.revision, xsd.integer)],
  ]);
}

/** What a dead letter adds to its graph (and what a replay deletes again). */
export function deadLetterQuads(parked: ParkedNotification, dead: DeadLetter): Quad[] {
  return annotatedGraphQuads(
    parked.graph,
    [],
    [
      [meta.deadLetteredAt, dateTimeLiteral(dead.at)],
      [meta.deadLetterReason, literal(dead.reason)],
    ],
  );
}

/** Where a parked notification stands in its queue: by entry number, then by @id. */
export type ParkedPosition = Pick<ParkedNotification, 'sequence' | 'iri'>;
export const parkedBefore = (a: ParkedPosition, b: ParkedPosition) =>
  a.sequence < b.sequence || (a.sequence === b.sequence && a.iri < b.iri);

export interface ParkedSelection {
  /** Dead letters only (true), none of them (false), or both (undefined). */
  dead?: boolean;
  /** Of this queue only, after this position, at most this many (a page). */
  queue?: string;
  after?: ParkedPosition;
  limit?: number;
}

/** The parked notifications (dead letters included unless `dead` says), in queuing order (see `parkedBefore`). */
export async function readParkedNotifications(
  reader: SparqlReader,
  selection: ParkedSelection = {},
): Promise<StoredParkedNotification[]> {
  const p = iriToNt;
  const deadPattern = `?g ${p(meta.deadLetteredAt)} ?deadAt ; ${p(meta.deadLetterReason)} ?reason`;
  const dead =
    selection.dead === undefined
      ? `OPTIONAL { ${deadPattern} }`
      : selection.dead
        ? deadPattern
        : `FILTER NOT EXISTS { ?g ${p(meta.deadLetteredAt)} ?deadAt }`;
  const queue = selection.queue === undefined ? '?queue' : termToNt(literal(selection.queue));
  const { after } = selection;
  const position =
    after === undefined
      ? ''
      : `FILTER(?seq > ${after.sequence} || (?seq = ${after.sequence} && STR(?n) > ${termToNt(literal(after.iri))}))`;
  const page = selection.limit === undefined ? '' : `ORDER BY ?seq STR(?n) LIMIT ${selection.limit}`;
  const rows = await reader.select(`SELECT ?g ?n ?queue ?seq ?at ?sub ?cb ?type ?lo ?rev ?trigger ?deadAt ?reason
    WHERE { GRAPH ?g {
    ?g ${p(meta.outboxQueue)} ${queue} ; ${p(meta.outboxSequence)} ?seq ; ${p(meta.outboxNotification)} ?n ;
       ${p(meta.queuedAt)} ?at ; ${p(meta.forSubscription)} ?sub ; ${p(meta.callback)} ?cb .
    ${position}
    ?n ${p(api.hasEventType)} ?type .
    OPTIONAL { ?n ${p(api.hasLogisticsObject)} ?lo }
    OPTIONAL { ?n ${p(api.isTriggeredBy)} ?trigger }
    OPTIONAL { ?g ${p(meta.aboutRevision)} ?rev }
    ${dead} } } ${page}`);
  return rows.results.bindings
    .map((b) => {
      const notification: ParkedNotification = {
        iri: b.n.value,
        graph: b.g.value,
        queue: selection.queue ?? b.queue.value,
        sequence: Number(b.seq.value),
        queuedAt: new Date(b.at.value),
        subscription: b.sub.value,
        callback: b.cb.value,
        eventType: b.type.value,
        ...(b.lo ? { object: b.lo.value } : {}),
        ...(b.rev ? { revision: Number(b.rev.value) } : {}),
        ...(b.trigger ? { triggeredBy: b.trigger.value } : {}),
      };
      return b.deadAt
        ? { notification, dead: { at: new Date(b.deadAt.value), reason: b.reason.value } }
        : { notification };
    })
    .sort((a, b) => (parkedBefore(a.notification, b.notification) ? -1 : 1));
}
