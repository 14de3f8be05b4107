import { createHash, randomUUID } from 'node:crypto';
import { BoundedCache } from '../../bounded-cache.js';
import { namedNode, quad, xsdLiteral, type Quad } from '../../rdf/terms.js';
import { tripleKey } from '../../rdf/triples.js';
import { API, api, apiLocalName, rdf, requestStatus, subscriptionEventType, xsd } from '../../rdf/vocab.js';
import {
  notifiedAfterQuad,
  outboxEntryQuads,
  type NotificationContent,
  type OutboxEntry,
  type Recipient,
} from '../../store/schema/outbox.js';
import type { RevisionRecord } from '../../store/schema/revisions.js';
import type { ActionRequestRecord, StatusEntry } from '../../store/schema/action-requests.js';
import type { DomainEvent, WriteTransaction } from '../../store/transaction.js';
import type { LogisticsObjectEntry, RevisionIndex } from '../objects/revision-index.js';
import type { Asked, Subscription, SubscriptionIndex } from './subscriptions.js';

/** What decides who receives an entry: its number, event type, topics and the recipients it names. */
type Addressing = Pick<OutboxEntry, 'sequence' | 'topics' | 'addressed'> & {
  content: Pick<NotificationContent, 'eventType'>;
};

/** The subscriptions an entry goes to besides those it names, and their recipients (same order). */
type Matching = Pick<Asked, 'subscriptions' | 'recipients'>;

/**
 * The active subscriptions an entry reaches without naming them: those to one of its topics, started before it,
 * asking for its event type (ONE Record API, "Subscription and SubscriptionRequest"). The same rule at write and
 * at delivery spares the entry listing them (docs/delivery.md, "How the outbox works"); the common case shares
 * the index's cached answer, so a write to an object with many subscriptions does not walk them.
 */
function matchingSubscriptions(entry: Addressing, index: SubscriptionIndex): Matching {
  const named = entry.addressed.length > 0 ? new Set(entry.addressed.map((r) => r.subscription)) : undefined;
  const asked = entry.topics.map(({ object, type }) => index.asking(object, type, entry.content.eventType));
  if (asked.length === 1 && !named && asked[0].startedThrough < entry.sequence) return asked[0];
  const [subscriptions, recipients]: [Subscription[], Recipient[]] = [[], []];
  const seen = asked.length > 1 ? new Set<Subscription>() : undefined;
  for (const { subscriptions: asking, startedThrough } of asked) {
    const startedBefore = startedThrough < entry.sequence;
    for (const s of asking) {
      if ((!startedBefore && index.notifiedAfter(s) >= entry.sequence) || named?.has(s.request.iri) || seen?.has(s))
        continue;
      seen?.add(s);
      subscriptions.push(s);
      recipients.push(s.recipient);
    }
  }
  return { subscriptions, recipients };
}

/** Everyone an entry goes to: the recipients it names, then the matching subscriptions. */
export function recipientsOf(entry: Addressing, index: SubscriptionIndex): readonly Recipient[] {
  const { recipients } = matchingSubscriptions(entry, index);
  return entry.addressed.length === 0 ? recipients : [...entry.addressed, ...recipients];
}

/** Per subscription, the suffix of its notifications' @ids. */
const recipientSuffixes = new BoundedCache<string, string>(100_000);

/**
 * The @id of the notification of `entry` to one recipient: stable, so a resend is recognised as the same notification.
 */
export function notificationIri(entry: Pick<OutboxEntry, 'iri'>, recipient: Pick<Recipient, 'subscription'>): string {
  let suffix = recipientSuffixes.get(recipient.subscription);
  if (suffix === undefined) {
    suffix = createHash('sha256').update(recipient.subscription).digest('hex').slice(0, 16);
    recipientSuffixes.set(recipient.subscription, suffix);
  }
  return `${entry.iri}-${suffix}`;
}

/** The NotificationEventType of an action request's status, e.g. CHANGE_REQUEST_ACCEPTED. */
export function statusEventType(request: ActionRequestRecord, status: string): string {
  const kind = apiLocalName(request.type)
    .replace(/([a-z])([A-Z])/g, '$1_$2')
    .toUpperCase();
  return `${API}${kind}_${apiLocalName(status).replace(/^REQUEST_/, '')}`;
}

/**
 * The top-level properties of an object whose values differ between two revisions: a change in
 * an embedded object counts for the property of the object that holds it. Triples are compared by
 * key: the store keeps literals in canonical form, so equal values have equal keys.
 */
export function changedProperties(object: string, before: readonly Quad[], after: readonly Quad[]): string[] {
  const parent = new Map<string, { subject: string; predicate: string }>();
  for (const t of [...before, ...after])
    if (t.object.termType === 'NamedNode' && t.subject.value !== t.object.value)
      parent.set(t.object.value, { subject: t.subject.value, predicate: t.predicate.value });
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
  for (const [i, t] of before.entries()) if (!isSet.has(was[i])) changed.add(topLevel(t) ?? '');
  for (const [i, t] of after.entries()) if (!wasSet.has(is[i])) changed.add(topLevel(t) ?? '');
  changed.delete('');
  return [...changed].sort();
}

/** What `Outbox.plan` added to a transaction: from which of its quads and events, and the entries' numbers. */
export interface PlannedEntries {
  insertFrom: number;
  eventsFrom: number;
  numbers: number[];
}

/**
 * Plans the notifications a write causes and puts them in the outbox in that same write: from
 * its domain events (object created, revision written, event appended, action request status),
 * one outbox entry per notification, written once whatever the number of subscriptions it goes
 * to (none is written when it goes to nobody). Each entry gets the next number, in the order
 * commits reach the journal; a subscription accepted by a write starts after the entries numbered so far.
 */
/** Objects a commit's notifications are about, as looked up before it is planned (Outbox.objectsToPlan). */
export type KnownObjects = ReadonlyMap<string, LogisticsObjectEntry>;

export class Outbox {
  private lastSequence = 0;
  /** Numbers of the entries of commits under way. */
  private readonly numbering = new Set<number>();

  constructor(
    private readonly subscriptions: SubscriptionIndex,
    private readonly revisions: RevisionIndex,
    private readonly baseUrl: string,
    /** This server's own holder: its requests notify nobody (it would notify itself). */
    private readonly holder: string,
  ) {}

  /**
   * Consumer of the after-commit stream (replay included): the numbering continues after a restart, even once every
   * entry is gone.
   */
  onCommitted(events: readonly DomainEvent[]): void {
    for (const e of events) {
      if (e.kind === 'notification-queued') this.lastSequence = Math.max(this.lastSequence, e.entry.sequence);
      else if (e.kind === 'outbox-compacted' || e.kind === 'outbox-advanced')
        this.lastSequence = Math.max(this.lastSequence, e.through);
      else if (e.kind === 'subscription-started') this.lastSequence = Math.max(this.lastSequence, e.after);
    }
  }

  /** Whether a commit of this process that writes entry `sequence` is under way. */
  readonly inFlight = (sequence: number): boolean => this.numbering.has(sequence);

  /**
   * Plans `tx`'s notifications; they are numbered anew (after every number planned so far) should
   * the store find a number taken by another process (`tx.renumberOutbox`); `settled` once the
   * commit is done, applied or not.
   */
  plan(tx: WriteTransaction, known: KnownObjects): PlannedEntries {
    const planned: PlannedEntries = { insertFrom: tx.insert.length, eventsFrom: tx.events.length, numbers: [] };
    this.planFrom(tx, planned, known);
    tx.renumberOutbox = (taken) => {
      this.settled(planned);
      this.lastSequence = Math.max(this.lastSequence, taken, ...planned.numbers);
      tx.insert.length = planned.insertFrom;
      tx.events.length = planned.eventsFrom;
      planned.numbers = [];
      this.planFrom(tx, planned, known);
    };
    return planned;
  }

  settled(planned: PlannedEntries): void {
    for (const n of planned.numbers) this.numbering.delete(n);
  }

  /**
   * The objects of this server whose latest revision planning `tx` reads (those its events and requests are about),
   * at once when the index holds them; else looked up first (a bounded index may have let them go), so `plan` finds
   * them in the same tick as the commit.
   */
  objectsToPlan(tx: WriteTransaction): KnownObjects | Promise<KnownObjects> {
    const objects = tx.events.flatMap((e) =>
      e.kind === 'event-appended'
        ? [e.event.object]
        : e.kind === 'action-request-created' ||
            e.kind === 'action-request-decided' ||
            e.kind === 'action-request-revoked'
          ? e.request.objects
          : [],
    );
    const held = new Map<string, LogisticsObjectEntry>();
    for (const object of objects) {
      const entry = this.revisions.get(object);
      if (entry) held.set(object, entry);
    }
    return held.size === objects.length || this.revisions.holdsAll ? held : this.revisions.findAll(objects);
  }

  private latestOf(object: string, known: KnownObjects): RevisionRecord | undefined {
    const entry = known.get(object) ?? this.revisions.get(object);
    return entry && this.revisions.latest(entry);
  }

  private planFrom(tx: WriteTransaction, planned: PlannedEntries, known: KnownObjects): void {
    this.planEntries(tx, known);
    for (let i = planned.eventsFrom; i < tx.events.length; i++) {
      const e = tx.events[i];
      if (e.kind === 'notification-queued') {
        planned.numbers.push(e.entry.sequence);
        this.numbering.add(e.entry.sequence);
      }
    }
  }

  private planEntries(tx: WriteTransaction, known: KnownObjects): void {
    for (const e of [...tx.events]) {
      switch (e.kind) {
        case 'object-created':
          this.aboutObject(tx, e.revision, subscriptionEventType.CREATED, () => ({}));
          break;
        case 'revision-written':
          this.aboutObject(tx, e.revision, subscriptionEventType.UPDATED, () => {
            // The write carries the revision it replaces, as the change read it.
            const written = tx.revisions.find((w) => w.revision.graph === e.revision.graph);
            const after = e.triples ?? written?.triples ?? [];
            const before = written?.replaces?.triples ?? [];
            const accepted = tx.events.find(
              (d) =>
                d.kind === 'action-request-decided' &&
                d.status.status === requestStatus.ACCEPTED &&
                d.request.objects.includes(e.revision.object),
            );
            return {
              changed: changedProperties(e.revision.object, before, after),
              ...(accepted && 'request' in accepted ? { triggeredBy: accepted.request.iri } : {}),
            };
          });
          break;
        case 'event-appended': {
          const latest = this.latestOf(e.event.object, known);
          if (latest)
            this.aboutObject(tx, latest, subscriptionEventType.EVENT_RECEIVED, () => ({
              event: e.event.iri,
            }));
          break;
        }
        case 'action-request-created':
        case 'action-request-decided':
        case 'action-request-revoked':
          this.aboutRequest(tx, e.request, e.status, known);
          break;
        default:
          break;
      }
    }
    // After this write's own entries: a subscription it accepts receives what later writes cause.
    for (const e of [...tx.events]) {
      if (
        e.kind !== 'action-request-decided' ||
        e.request.type !== api.SubscriptionRequest ||
        e.status.status !== requestStatus.ACCEPTED
      )
        continue;
      tx.insert.push(notifiedAfterQuad(e.request.iri, this.lastSequence));
      tx.events.push({ kind: 'subscription-started', subscription: e.request.iri, after: this.lastSequence });
    }
  }

  /** `details` is computed only when some subscription wants the notification (a diff costs a revision read). */
  private aboutObject(
    tx: WriteTransaction,
    revision: RevisionRecord,
    eventType: string,
    details: () => Partial<NotificationContent>,
  ): void {
    const topics = [{ object: revision.object, type: revision.mostSpecificType }];
    const matching = matchingSubscriptions(
      { sequence: this.lastSequence + 1, content: { eventType }, topics, addressed: [] },
      this.subscriptions,
    );
    if (matching.recipients.length === 0) return;
    this.queue(
      tx,
      {
        eventType,
        object: revision.object,
        objectType: revision.mostSpecificType,
        revision: revision.number,
        ...details(),
      },
      topics,
      [],
      matching,
    );
  }

  /**
   * Status notifications: to subscriptions that ask for them on the objects the request concerns,
   * to the SubscriptionRequest's own subscriber, and to the requester of a Change or an
   * AccessDelegation that asked for them (once per organisation; never to this server's holder).
   * The last two are named in the entry: no topic would lead to them.
   */
  private aboutRequest(
    tx: WriteTransaction,
    request: ActionRequestRecord,
    status: StatusEntry,
    known: KnownObjects,
  ): void {
    const topics = request.objects.flatMap((object) => {
      const latest = this.latestOf(object, known);
      return latest ? [{ object, type: latest.mostSpecificType }] : [];
    });
    const eventType = statusEventType(request, status.status);
    const own = this.subscriptions.forRequest(request.iri);
    const addressed: Recipient[] = own?.notifyRequestStatusChange ? [own.recipient] : [];
    const matching = matchingSubscriptions(
      { sequence: this.lastSequence + 1, content: { eventType }, topics, addressed },
      this.subscriptions,
    );
    const object = request.objects[0];
    const requester = request.requestedBy;
    const notified = [...(addressed.length > 0 ? [own!] : []), ...matching.subscriptions];
    if (request.notifiesRequester && requester !== this.holder && !notified.some((s) => s.subscriber === requester)) {
      // Queued with the requester's subscription to the object, if it has one, so their order holds.
      const topic =
        object === undefined
          ? `${api.LOGISTICS_OBJECT_IDENTIFIER} ${request.iri}`
          : `${api.LOGISTICS_OBJECT_IDENTIFIER} ${object}`;
      addressed.push({
        queue: `${requester} ${topic}`,
        subscription: request.iri,
        callback: this.subscriptions.callbackOf(requester),
      });
    }
    if (addressed.length + matching.recipients.length === 0) return;
    // A change accepted in this same write: the revision it wrote.
    const written = tx.events.find((d) => d.kind === 'revision-written' && d.revision.object === object);
    const latest =
      written?.kind === 'revision-written'
        ? written.revision
        : object === undefined
          ? undefined
          : this.latestOf(object, known);
    const content: NotificationContent = {
      eventType,
      triggeredBy: request.iri,
      ...(latest ? { object: latest.object, objectType: latest.mostSpecificType, revision: latest.number } : {}),
    };
    this.queue(tx, content, topics, addressed, matching);
  }

  /**
   * `matching`: whom it goes to besides `addressed`, as `recipientsOf` finds them now (delivery need not look again).
   */
  private queue(
    tx: WriteTransaction,
    content: NotificationContent,
    topics: OutboxEntry['topics'],
    addressed: readonly Recipient[],
    matching: Matching,
  ): void {
    const recipients = addressed.length === 0 ? matching.recipients : [...addressed, ...matching.recipients];
    const entry: OutboxEntry = {
      sequence: ++this.lastSequence,
      iri: `${this.baseUrl}/notifications/${randomUUID()}`,
      queuedAt: new Date(),
      content,
      topics,
      addressed,
      recipients: recipients.length,
    };
    tx.insert.push(...outboxEntryQuads(entry));
    tx.events.push({ kind: 'notification-queued', entry, recipients });
  }
}

/** The triples of a Notification (without the object's body, which is added when it is sent). */
export function notificationQuads(iri: string, c: NotificationContent): Quad[] {
  const n = namedNode(iri);
  const out: Quad[] = [
    quad(n, namedNode(rdf.type), namedNode(api.Notification)),
    quad(n, namedNode(api.hasEventType), namedNode(c.eventType)),
  ];
  if (c.object !== undefined) out.push(quad(n, namedNode(api.hasLogisticsObject), namedNode(c.object)));
  if (c.objectType !== undefined)
    out.push(quad(n, namedNode(api.hasLogisticsObjectType), xsdLiteral(c.objectType, xsd.anyURI)));
  // The object's revision the notification is about, so a receiver can tell a gap (an integer: sent as a JSON number).
  if (c.revision !== undefined) out.push(quad(n, namedNode(api.hasRevision), xsdLiteral(c.revision, xsd.integer)));
  for (const p of c.changed ?? []) out.push(quad(n, namedNode(api.hasChangedProperty), xsdLiteral(p, xsd.anyURI)));
  if (c.triggeredBy !== undefined) out.push(quad(n, namedNode(api.isTriggeredBy), namedNode(c.triggeredBy)));
  if (c.event !== undefined) out.push(quad(n, namedNode(api.hasLogisticsEvent), namedNode(c.event)));
  return out;
}
