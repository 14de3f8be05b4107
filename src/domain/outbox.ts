import { randomUUID } from 'node:crypto';
import { namedNode, quad, xsdLiteral, type Quad } from '../rdf/terms.js';
import { API, api, apiLocalName, rdf, requestStatus, subscriptionEventType, xsd } from '../rdf/vocab.js';
import type { GraphStore } from '../store/graph-store.js';
import { outboxEntryQuads, outboxGraph, type OutboxEntry } from '../store/schema/outbox.js';
import type { RevisionRecord } from '../store/schema/revisions.js';
import type { ActionRequestRecord, StatusEntry } from '../store/schema/action-requests.js';
import type { DomainEvent, WriteTransaction } from '../store/transaction.js';
import type { RevisionIndex } from './revision-index.js';
import type { Subscription, SubscriptionIndex } from './subscriptions.js';

/** What one notification says, before it is queued for a subscription. */
interface NotificationContent {
  eventType: string;
  object?: string;
  objectType?: string;
  revision?: number;
  changed?: readonly string[];
  triggeredBy?: string;
  event?: string;
}

/** Who a notification goes to: its queue, what it is sent for (a SubscriptionRequest, or the action request whose requester asked), where. */
interface Recipient {
  queue: string;
  for: string;
  callback: string;
}

const toSubscriber = (s: Subscription): Recipient => ({ queue: s.queue, for: s.request.iri, callback: s.callback });

/** The NotificationEventType of an action request's status, e.g. CHANGE_REQUEST_ACCEPTED. */
export function statusEventType(request: ActionRequestRecord, status: string): string {
  const kind = apiLocalName(request.type).replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase();
  return `${API}${kind}_${apiLocalName(status).replace(/^REQUEST_/, '')}`;
}

/**
 * A triple as a string that tells it from any other (no escaping: only the value, last, may hold
 * any character). The store keeps literals in canonical form, so equal values have equal strings.
 */
function tripleKey(t: Quad): string {
  const o = t.object;
  return `${t.subject.value}\n${t.predicate.value}\n${o.termType}\n${o.termType === 'Literal' ? `${o.datatype.value}\n${o.language}` : '\n'}\n${o.value}`;
}

/**
 * The top-level properties of an object whose values differ between two revisions: a change in
 * an embedded object counts for the property of the object that holds it.
 */
export function changedProperties(object: string, before: readonly Quad[], after: readonly Quad[]): string[] {
  const parent = new Map<string, { subject: string; predicate: string }>();
  for (const t of [...before, ...after]) if (t.object.termType === 'NamedNode' && t.subject.value !== t.object.value) parent.set(t.object.value, { subject: t.subject.value, predicate: t.predicate.value });
  const topLevel = (t: Quad): string | undefined => {
    let subject = t.subject.value;
    let predicate = t.predicate.value;
    for (let depth = 0; subject !== object; depth++) {
      const up = parent.get(subject);
      if (!up || depth > 64) return undefined;
      subject = up.subject;
      predicate = up.predicate;
    }
    return predicate;
  };
  const [was, is] = [before.map(tripleKey), after.map(tripleKey)];
  const [wasSet, isSet] = [new Set(was), new Set(is)];
  const changed = new Set<string>();
  before.forEach((t, i) => isSet.has(was[i]) || changed.add(topLevel(t) ?? ''));
  after.forEach((t, i) => wasSet.has(is[i]) || changed.add(topLevel(t) ?? ''));
  changed.delete('');
  return [...changed].sort();
}

/**
 * Plans the notifications a write causes and puts them in the outbox in that same write: from
 * its domain events (object created, revision written, event appended, action request status),
 * one outbox entry per matching active subscription. Each entry gets the next queuing number, in
 * the order commits reach the journal.
 */
export class Outbox {
  private lastSequence = 0;

  constructor(
    private readonly subscriptions: SubscriptionIndex,
    private readonly revisions: RevisionIndex,
    /** Reads an earlier revision (for hasChangedProperty): the parsed-revision cache, which the change has just read. */
    private readonly readRevision: (revision: RevisionRecord) => readonly Quad[],
    private readonly baseUrl: string,
    /** This server's own holder: its requests notify nobody (it would notify itself). */
    private readonly holder: string,
  ) {}

  /** Consumer of the after-commit stream (replay included): the numbering continues after a restart. */
  onCommitted(events: readonly DomainEvent[]): void {
    for (const e of events) if (e.kind === 'notification-queued') this.lastSequence = Math.max(this.lastSequence, e.entry.sequence);
  }

  plan(tx: WriteTransaction): void {
    for (const e of [...tx.events]) {
      switch (e.kind) {
        case 'object-created':
          this.aboutObject(tx, e.revision, subscriptionEventType.CREATED, () => ({}));
          break;
        case 'revision-written':
          this.aboutObject(tx, e.revision, subscriptionEventType.UPDATED, () => {
            const after = e.triples ?? tx.revisions.find((w) => w.revision.graph === e.revision.graph)?.triples ?? [];
            const entry = this.revisions.get(e.revision.object);
            const previous = entry && this.revisions.revision(entry, e.revision.number - 1);
            const before = previous ? this.readRevision(previous) : [];
            const accepted = tx.events.find((d) => d.kind === 'action-request-decided' && d.status.status === requestStatus.ACCEPTED && d.request.objects.includes(e.revision.object));
            return { changed: changedProperties(e.revision.object, before, after), ...(accepted && 'request' in accepted ? { triggeredBy: accepted.request.iri } : {}) };
          });
          break;
        case 'event-appended': {
          const entry = this.revisions.get(e.event.object);
          if (entry) this.aboutObject(tx, this.revisions.latest(entry), subscriptionEventType.EVENT_RECEIVED, () => ({ event: e.event.iri }));
          break;
        }
        case 'action-request-created':
        case 'action-request-decided':
        case 'action-request-revoked':
          this.aboutRequest(tx, e.request, e.status);
          break;
        default:
          break;
      }
    }
  }

  /** `details` is computed only when some subscription wants the notification (a diff costs a revision read). */
  private aboutObject(tx: WriteTransaction, revision: RevisionRecord, eventType: string, details: () => Partial<NotificationContent>): void {
    const recipients = this.subscriptions.matching(revision.object, revision.mostSpecificType).filter((s) => s.eventTypes.has(eventType));
    if (recipients.length === 0) return;
    const content: NotificationContent = { eventType, object: revision.object, objectType: revision.mostSpecificType, revision: revision.number, ...details() };
    for (const s of recipients) this.queue(tx, toSubscriber(s), content);
  }

  /**
   * Status notifications: to subscriptions that ask for them on the objects the request concerns,
   * to the SubscriptionRequest's own subscriber, and to the requester of a Change or an
   * AccessDelegation that asked for them (once per organisation; never to this server's holder).
   */
  private aboutRequest(tx: WriteTransaction, request: ActionRequestRecord, status: StatusEntry): void {
    const recipients = new Set<Subscription>();
    for (const object of request.objects) {
      const entry = this.revisions.get(object);
      if (!entry) continue;
      for (const s of this.subscriptions.matching(object, this.revisions.latest(entry).mostSpecificType)) if (s.notifyRequestStatusChange) recipients.add(s);
    }
    const own = this.subscriptions.forRequest(request.iri);
    if (own?.notifyRequestStatusChange) recipients.add(own);
    const object = request.objects[0];
    const entry = object === undefined ? undefined : this.revisions.get(object);
    // A change accepted in this same write: the revision it wrote.
    const written = tx.events.find((d) => d.kind === 'revision-written' && d.revision.object === object);
    const latest = written?.kind === 'revision-written' ? written.revision : entry && this.revisions.latest(entry);
    const content: NotificationContent = {
      eventType: statusEventType(request, status.status),
      triggeredBy: request.iri,
      ...(latest ? { object: latest.object, objectType: latest.mostSpecificType, revision: latest.number } : {}),
    };
    for (const s of recipients) this.queue(tx, toSubscriber(s), content);
    const requester = request.requestedBy;
    if (request.notifiesRequester && requester !== this.holder && ![...recipients].some((s) => s.subscriber === requester)) {
      // Queued with the requester's subscription to the object, if it has one, so their order holds.
      const topic = object === undefined ? `${api.LOGISTICS_OBJECT_IDENTIFIER} ${request.iri}` : `${api.LOGISTICS_OBJECT_IDENTIFIER} ${object}`;
      this.queue(tx, { queue: `${requester} ${topic}`, for: request.iri, callback: this.subscriptions.callbackOf(requester) }, content);
    }
  }

  private queue(tx: WriteTransaction, to: Recipient, content: NotificationContent): void {
    const id = randomUUID();
    const entry: OutboxEntry = {
      iri: `${this.baseUrl}/notifications/${id}`,
      graph: outboxGraph(id),
      queue: to.queue,
      sequence: ++this.lastSequence,
      queuedAt: new Date(),
      subscription: to.for,
      callback: to.callback,
      eventType: content.eventType,
      ...(content.object === undefined ? {} : { object: content.object }),
      ...(content.revision === undefined ? {} : { revision: content.revision }),
      ...(content.triggeredBy === undefined ? {} : { triggeredBy: content.triggeredBy }),
    };
    tx.insert.push(...outboxEntryQuads(entry, notificationQuads(entry.iri, content)));
    tx.events.push({ kind: 'notification-queued', entry });
  }
}

/** The triples of a Notification (without the object's body, which is added when it is sent). */
function notificationQuads(iri: string, c: NotificationContent): Quad[] {
  const n = namedNode(iri);
  const out: Quad[] = [quad(n, namedNode(rdf.type), namedNode(api.Notification)), quad(n, namedNode(api.hasEventType), namedNode(c.eventType))];
  if (c.object !== undefined) out.push(quad(n, namedNode(api.hasLogisticsObject), namedNode(c.object)));
  if (c.objectType !== undefined) out.push(quad(n, namedNode(api.hasLogisticsObjectType), xsdLiteral(c.objectType, xsd.anyURI)));
  // The object's revision the notification is about, so a receiver can tell a gap.
  if (c.revision !== undefined) out.push(quad(n, namedNode(api.hasRevision), xsdLiteral(c.revision, xsd.positiveInteger)));
  for (const p of c.changed ?? []) out.push(quad(n, namedNode(api.hasChangedProperty), xsdLiteral(p, xsd.anyURI)));
  if (c.triggeredBy !== undefined) out.push(quad(n, namedNode(api.isTriggeredBy), namedNode(c.triggeredBy)));
  if (c.event !== undefined) out.push(quad(n, namedNode(api.hasLogisticsEvent), namedNode(c.event)));
  return out;
}

/**
 * The store as the domain's writers get it: every commit first puts the notifications it causes
 * in the outbox (the same transaction), then goes to the store. Everything else is the store's.
 */
export class PublishingStore implements GraphStore {
  constructor(
    private readonly inner: GraphStore,
    private readonly outbox: Outbox,
  ) {}

  get claims() {
    return this.inner.claims;
  }
  get committed() {
    return this.inner.committed;
  }
  begin(quads?: { insert?: readonly Quad[]; delete?: readonly Quad[] }): WriteTransaction {
    return this.inner.begin(quads);
  }
  commit(tx: WriteTransaction): Promise<void> {
    this.outbox.plan(tx);
    return this.inner.commit(tx);
  }
  graphTriples(graph: string): Quad[] {
    return this.inner.graphTriples(graph);
  }
  revision(object: string, number: number) {
    return this.inner.revision(object, number);
  }
  finishedRequest(iri: string) {
    return this.inner.finishedRequest(iri);
  }
  finishedRequests(object?: string) {
    return this.inner.finishedRequests(object);
  }
  select(sparql: string) {
    return this.inner.select(sparql);
  }
}
