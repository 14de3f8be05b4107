import { dateTimeLiteral, iriToNt, literal, namedNode, quad, termToNt, xsdLiteral, type Quad } from '../../rdf/terms.js';
import { STORE, api, store as meta, xsd } from '../../rdf/vocab.js';
import type { GraphStore, SparqlReader } from '../graph-store.js';

/*
 * The notification outbox: one named graph per notification still to deliver, written in the
 * same commit as the change, event or decision that caused it, and deleted in the commit that
 * records its delivery. It holds the notification (as sent, without the object's body, which is
 * read when sending) and, on the graph's own IRI, its queue entry; a dead letter adds when and why.
 */

export interface OutboxEntry {
  /** The notification's @id, also its Idempotency-Key and webhook-id. */
  iri: string;
  graph: string;
  /** One FIFO queue per subscriber and topic. */
  queue: string;
  /** Order of queuing on this server; FIFO within a queue. */
  sequence: number;
  queuedAt: Date;
  /**
   * The SubscriptionRequest the notification is sent for; for a status notification to the
   * requester of an action request that asked for them (notifyRequestStatusChange), that request.
   */
  subscription: string;
  /** Where it is POSTed. */
  callback: string;
  eventType: string;
  object?: string;
  /** The object's revision the notification is about. */
  revision?: number;
  /** The action request that caused it (its api:isTriggeredBy). */
  triggeredBy?: string;
}

export interface DeadLetter {
  at: Date;
  reason: string;
}

export interface StoredOutboxEntry {
  entry: OutboxEntry;
  dead?: DeadLetter;
}

const GRAPH_PREFIX = `${STORE}outbox:`;
export const outboxGraph = (id: string) => `${GRAPH_PREFIX}${id}`;

/** How many sequence numbers one page of the outbox spans. */
export const OUTBOX_PAGE_SPAN = 256;

/**
 * The page of a queue that holds the entry numbered `sequence`: entries of a queue whose numbers
 * fall in one span of OUTBOX_PAGE_SPAN share it, so a queue's backlog is read in sequence order,
 * page after page, each by one exact-match lookup, without sorting the whole queue.
 */
export const outboxPage = (queue: string, sequence: number) => `${Math.floor(sequence / OUTBOX_PAGE_SPAN)} ${queue}`;

/** The graph of a queued notification: its triples plus the queue entry. */
export function outboxEntryQuads(entry: OutboxEntry, notification: readonly Quad[]): Quad[] {
  const g = namedNode(entry.graph);
  const out = notification.map((t) => quad(t.subject, t.predicate, t.object, g));
  out.push(
    quad(g, namedNode(meta.outboxNotification), namedNode(entry.iri), g),
    quad(g, namedNode(meta.outboxQueue), literal(entry.queue), g),
    quad(g, namedNode(meta.outboxSequence), xsdLiteral(entry.sequence, xsd.integer), g),
    quad(g, namedNode(meta.outboxPage), literal(outboxPage(entry.queue, entry.sequence)), g),
    quad(g, namedNode(meta.queuedAt), dateTimeLiteral(entry.queuedAt), g),
    quad(g, namedNode(meta.forSubscription), namedNode(entry.subscription), g),
    quad(g, namedNode(meta.callback), literal(entry.callback), g),
  );
  if (entry.revision !== undefined) out.push(quad(g, namedNode(meta.aboutRevision), xsdLiteral(entry.revision, xsd.integer), g));
  return out;
}

/** What a dead letter adds to its entry's graph (and what a replay deletes again). */
export function deadLetterQuads(entry: OutboxEntry, dead: DeadLetter): Quad[] {
  const g = namedNode(entry.graph);
  return [quad(g, namedNode(meta.deadLetteredAt), dateTimeLiteral(dead.at), g), quad(g, namedNode(meta.deadLetterReason), literal(dead.reason), g)];
}

/** The notification's own triples in `graphTriples` (the queue entry left out). */
export function outboxNotificationTriples(graph: string, graphTriples: readonly Quad[]): Quad[] {
  return graphTriples.filter((t) => t.subject.value !== graph);
}

/** Which entries to read: pending ones or dead letters only. */
export interface OutboxSelection {
  dead?: boolean;
}

/**
 * The pending notifications of one page of a queue (see outboxPage), in queuing order, each with
 * the triples of its graph: the page's
 * graphs by one lookup of their page literal, then each graph read whole. (One SPARQL query
 * joining the page with the entries' properties was planned from the other end by Oxigraph: it
 * visited every outbox graph for each page, so draining a backlog took time quadratic in its length.)
 */
export function readOutboxPage(reader: Pick<GraphStore, 'select' | 'graphTriples'>, page: string): { entry: OutboxEntry; triples: Quad[] }[] {
  const graphs = reader.select(`SELECT ?g WHERE { GRAPH ?g { ?g ${iriToNt(meta.outboxPage)} ${termToNt(literal(page))} } }`).results.bindings.map((b) => b.g.value);
  return graphs
    .flatMap((graph) => {
      const triples = reader.graphTriples(graph);
      const stored = entryOfGraph(graph, triples);
      return stored && !stored.dead ? [{ entry: stored.entry, triples }] : [];
    })
    .sort((a, b) => a.entry.sequence - b.entry.sequence);
}

/** An outbox entry from the triples of its graph (undefined if they do not hold one). */
function entryOfGraph(graph: string, triples: readonly Quad[]): StoredOutboxEntry | undefined {
  const own = new Map<string, string>();
  const about = new Map<string, string>();
  for (const t of triples) {
    if (t.subject.value === graph) own.set(t.predicate.value, t.object.value);
  }
  const iri = own.get(meta.outboxNotification);
  if (iri === undefined) return undefined;
  for (const t of triples) if (t.subject.value === iri) about.set(t.predicate.value, t.object.value);
  const [object, revision, triggeredBy, deadAt] = [about.get(api.hasLogisticsObject), own.get(meta.aboutRevision), about.get(api.isTriggeredBy), own.get(meta.deadLetteredAt)];
  const entry: OutboxEntry = {
    iri,
    graph,
    queue: own.get(meta.outboxQueue)!,
    sequence: Number(own.get(meta.outboxSequence)),
    queuedAt: new Date(own.get(meta.queuedAt)!),
    subscription: own.get(meta.forSubscription)!,
    callback: own.get(meta.callback)!,
    eventType: about.get(api.hasEventType)!,
    ...(object === undefined ? {} : { object }),
    ...(revision === undefined ? {} : { revision: Number(revision) }),
    ...(triggeredBy === undefined ? {} : { triggeredBy }),
  };
  return deadAt === undefined ? { entry } : { entry, dead: { at: new Date(deadAt), reason: own.get(meta.deadLetterReason)! } };
}

/** The queued notifications (dead letters included unless `selection` says), in queuing order. */
export function readOutbox(reader: SparqlReader, selection: OutboxSelection = {}): StoredOutboxEntry[] {
  const p = iriToNt;
  const deadPattern = `?g ${p(meta.deadLetteredAt)} ?deadAt ; ${p(meta.deadLetterReason)} ?reason`;
  const dead = selection.dead === undefined ? `OPTIONAL { ${deadPattern} }` : selection.dead ? deadPattern : `FILTER NOT EXISTS { ?g ${p(meta.deadLetteredAt)} ?deadAt }`;
  const rows = reader.select(`SELECT ?g ?n ?queue ?seq ?at ?sub ?cb ?type ?lo ?rev ?trigger ?deadAt ?reason WHERE { GRAPH ?g {
    ?g ${p(meta.outboxNotification)} ?n ; ${p(meta.outboxQueue)} ?queue ; ${p(meta.outboxSequence)} ?seq ;
       ${p(meta.queuedAt)} ?at ; ${p(meta.forSubscription)} ?sub ; ${p(meta.callback)} ?cb .
    ?n ${p(api.hasEventType)} ?type .
    OPTIONAL { ?n ${p(api.hasLogisticsObject)} ?lo }
    OPTIONAL { ?n ${p(api.isTriggeredBy)} ?trigger }
    OPTIONAL { ?g ${p(meta.aboutRevision)} ?rev }
    ${dead} } }`);
  return rows.results.bindings
    .map((b) => {
      const entry: OutboxEntry = {
        iri: b.n.value,
        graph: b.g.value,
        queue: b.queue.value,
        sequence: Number(b.seq.value),
        queuedAt: new Date(b.at.value),
        subscription: b.sub.value,
        callback: b.cb.value,
        eventType: b.type.value,
        ...(b.lo ? { object: b.lo.value } : {}),
        ...(b.rev ? { revision: Number(b.rev.value) } : {}),
        ...(b.trigger ? { triggeredBy: b.trigger.value } : {}),
      };
      return b.deadAt ? { entry, dead: { at: new Date(b.deadAt.value), reason: b.reason.value } } : { entry };
    })
    .sort((a, b) => a.entry.sequence - b.entry.sequence);
}
