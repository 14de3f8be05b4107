import { randomUUID } from 'node:crypto';
import type { Authorizer, Caller } from '../access/authorizer.js';
import { HttpError, type ErrorDetail } from '../../errors.js';
import type { ApiOntology } from '../../rdf/api-ontology.js';
import { isValidIri, type Quad, type Term } from '../../rdf/terms.js';
import { groupBySubject, nameBlankNodes } from '../../rdf/triples.js';
import { INTERNAL_SCHEME, api, rdf } from '../../rdf/vocab.js';
import { shapeError, type Violation } from '../../shapes/validator.js';
import { SHAPES } from '../../shapes/vocabulary.js';
import { claimKey } from '../../store/claims.js';
import type { GraphStore } from '../../store/graph-store.js';
import type { NotificationFilter } from '../../store/graph-store.js';
import type { DomainEvent } from '../../store/transaction.js';
import {
  receivedNotificationGraph,
  receivedNotificationQuads,
  type ReceivedNotificationRecord,
} from '../../store/schema/received-notifications.js';

/** What a POST /notifications did: stored it, or recognised a notification already stored. */
export interface Receipt {
  record: ReceivedNotificationRecord;
  duplicate: boolean;
}

/** A checked notification: its root node and its triples, blank nodes named. */
export interface ValidNotification {
  iri: string;
  eventType: string;
  object?: string;
  triples: Quad[];
}

const newInternalIri = () => `${INTERNAL_SCHEME}${randomUUID()}`;
/** How triples break the data model's shapes (none when validation is off). */
export type ShapeCheck = (triples: readonly Quad[]) => Violation[];
/**
 * The API ontology's closed list of NotificationEventTypes (owl:oneOf), which the generated shape
 * enforces, leaves out two event types it declares as NotificationEventType individuals
 * (LOGISTICS_OBJECT_AVAILABLE, LOGISTICS_OBJECT_ACCESS_GRANTED), and IATA's own example uses one:
 * for hasEventType the individuals decide (checked below), not that list.
 */
const EVENT_TYPE_LIST_SHAPE = `${SHAPES}range-api-hasEventType-value`;
const iriValued = (t: Term) => t.termType === 'NamedNode' || (t.termType === 'Literal' && isValidIri(t.value));

/**
 * Checks a body as one api:Notification (ONE Record API, "Notification"; API ontology 2.3.0): its own triples meet
 * the data model's shapes (a carried Logistics Object is the publisher's data, not checked), one event type, at
 * most one object, trigger, event and object type, IRIs in hasChangedProperty. Every problem found is named in one
 * 400 (ONE Record API, "POST /notifications").
 */
export function checkNotification(
  quads: readonly Quad[],
  ontology: ApiOntology,
  shapes: ShapeCheck = () => [],
): ValidNotification {
  const roots = quads
    .filter((q) => q.predicate.value === rdf.type && q.object.value === api.Notification)
    .map((q) => q.subject);
  const distinct = [...new Map(roots.map((r) => [`${r.termType}:${r.value}`, r])).values()];
  if (distinct.length !== 1) {
    throw new HttpError(400, 'invalid_notification', {
      message:
        distinct.length === 0
          ? 'the body holds no node of type api:Notification'
          : 'the body must hold exactly one api:Notification',
      property: rdf.type,
    });
  }
  const named = nameBlankNodes(quads, newInternalIri);
  const rootIndex = quads.findIndex((q) => q.subject.equals(distinct[0]));
  const root = named[rootIndex].subject.value;
  const own = groupBySubject(named, (t) => t.value).get(root) ?? [];
  const violations = shapes(own).filter(
    (v) =>
      !(v.shape === EVENT_TYPE_LIST_SHAPE && v.value !== undefined && ontology.isNotificationEventType(v.value.value)),
  );
  if (violations.length > 0) throw shapeError(violations, 400);
  const values = (p: string) => own.filter((t) => t.predicate.value === p).map((t) => t.object);
  const problems: ErrorDetail[] = [];
  const atMostOne = (p: string, what: string, ok: (t: Term) => boolean) => {
    const v = values(p);
    if (v.length > 1) problems.push({ message: `a Notification has at most one ${what}`, property: p });
    else if (v.length === 1 && !ok(v[0])) problems.push({ message: `${what} must be an IRI`, property: p });
  };
  const eventTypes = values(api.hasEventType);
  if (eventTypes.length !== 1)
    problems.push({
      message: `a Notification has exactly one hasEventType (found ${eventTypes.length})`,
      property: api.hasEventType,
    });
  else if (eventTypes[0].termType !== 'NamedNode' || !ontology.isNotificationEventType(eventTypes[0].value)) {
    problems.push({
      message: `hasEventType ${eventTypes[0].value} is not a NotificationEventType of the API ontology`,
      property: api.hasEventType,
    });
  }
  atMostOne(api.hasLogisticsObject, 'hasLogisticsObject', (t) => t.termType === 'NamedNode');
  atMostOne(api.isTriggeredBy, 'isTriggeredBy', (t) => t.termType === 'NamedNode');
  atMostOne(api.hasLogisticsEvent, 'hasLogisticsEvent', (t) => t.termType === 'NamedNode');
  atMostOne(api.hasLogisticsObjectType, 'hasLogisticsObjectType', iriValued);
  for (const changed of values(api.hasChangedProperty)) {
    if (!iriValued(changed))
      problems.push({
        message: `hasChangedProperty ${JSON.stringify(changed.value)} must be a property IRI`,
        property: api.hasChangedProperty,
      });
  }
  if (problems.length > 0) throw new HttpError(400, 'invalid_notification', problems);
  const object = values(api.hasLogisticsObject)[0];
  return { iri: root, eventType: eventTypes[0].value, object: object?.value, triples: named };
}

/**
 * Notifications received on POST /notifications: stored durably, each once (by @id, or by its
 * sender's Idempotency-Key), listed for operators. The store keeps them out of its hot part
 * (StoreReader.receivedNotifications): nothing of them is held in memory here but the last arrival number.
 */
export class ReceivedNotifications {
  private retention: { timer: NodeJS.Timeout; sweeping?: Promise<void> } | undefined;

  private constructor(
    private readonly store: GraphStore,
    private readonly ontology: ApiOntology,
    private readonly access: Authorizer,
    private readonly shapes: ShapeCheck,
    private lastSequence: number,
  ) {}

  /**
   * Numbering goes on after the last notification the store holds; a consumer of the after-commit stream, so that it
   * also goes on after those other processes on the same engine number.
   */
  static async open(
    store: GraphStore,
    ontology: ApiOntology,
    access: Authorizer,
    shapes: ShapeCheck = () => [],
  ): Promise<ReceivedNotifications> {
    return new ReceivedNotifications(store, ontology, access, shapes, await store.receivedNotifications.lastSequence());
  }

  onCommitted(events: readonly DomainEvent[]): void {
    for (const e of events)
      if (e.kind === 'notification-received') this.lastSequence = Math.max(this.lastSequence, e.notification.sequence);
  }

  /**
   * Removes the notifications received more than `days` ago, now and then every hour
   * (`notifications.retentionDays`), a chunk per event-loop turn so that requests are not held up.
   */
  keepFor(days: number, log: (message: string) => void): void {
    const sweep = async () => {
      const cutoff = new Date(Date.now() - days * DAY_MS);
      let removed = 0;
      for (let chunk = RETENTION_CHUNK; chunk === RETENTION_CHUNK && this.retention; removed += chunk) {
        chunk = await this.store.receivedNotifications.removeReceivedBefore(cutoff, RETENTION_CHUNK);
        await new Promise((resolve) => setImmediate(resolve));
      }
      if (removed > 0) log(`retention: ${removed} received notifications older than ${days} days removed`);
    };
    const run = () => {
      const retention = this.retention;
      if (!retention || retention.sweeping !== undefined) return;
      retention.sweeping = sweep()
        .catch((err: Error) =>
          log(`retention: removing old received notifications failed (tried again within the hour): ${err.message}`),
        )
        .finally(() => (retention.sweeping = undefined));
    };
    this.retention = { timer: setInterval(run, RETENTION_EVERY_MS).unref() };
    run();
  }

  /** Stops removing old notifications (before the store closes). */
  async stop(): Promise<void> {
    const retention = this.retention;
    if (!retention) return;
    this.retention = undefined;
    clearInterval(retention.timer);
    await retention.sweeping;
  }

  /** Stores a notification unless it was stored before; 409 while the same one is being stored. */
  async receive(quads: readonly Quad[], caller: Caller, idempotencyKey?: string): Promise<Receipt> {
    const notification = checkNotification(quads, this.ontology, this.shapes);
    const stored = this.store.receivedNotifications;
    const storedBefore = async () =>
      (await stored.withId(notification.iri)) ??
      (idempotencyKey === undefined ? undefined : await stored.withKey(caller.agent, idempotencyKey));
    // Claimed before the store is asked: once claimed, the store holds every earlier one of it.
    const tx = this.store.begin();
    const keys = [notification.iri, ...(idempotencyKey === undefined ? [] : [senderKey(caller.agent, idempotencyKey)])];
    const claimed = keys.every((k) => tx.claim(claimKey.notification(k)));
    const seen = await storedBefore().catch((err: unknown) => {
      tx.release();
      throw err;
    });
    if (seen || !claimed) {
      tx.release();
      if (seen) return { record: seen, duplicate: true };
      throw new HttpError(409, 'notification_in_flight', {
        message: 'the same notification is being stored by another request; send it again later',
        resource: notification.iri,
      });
    }
    const record: ReceivedNotificationRecord = {
      iri: notification.iri,
      graph: receivedNotificationGraph(randomUUID()),
      sender: caller.agent,
      receivedAt: new Date(),
      sequence: ++this.lastSequence,
      ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
      eventType: notification.eventType,
      ...(notification.object === undefined ? {} : { object: notification.object }),
    };
    tx.insert.push(...receivedNotificationQuads(record, notification.triples));
    // Nothing writes to it again: the store keeps it out of its hot part. It is new (its name a
    // fresh UUID), so the store has nothing of it to look up and delete.
    tx.created.add(record.graph);
    tx.finished.push(record.graph);
    tx.events.push({ kind: 'notification-received', notification: record });
    await this.store.commit(tx);
    return { record, duplicate: false };
  }

  /**
   * Received notifications matching `filter`, in arrival order: how many, and one page of them (internal actors only).
   */
  list(
    caller: Caller,
    filter: NotificationFilter,
    skip: number,
    limit: number,
  ): Promise<{ total: number; page: ReceivedNotificationRecord[] }> {
    this.access.check(caller, { kind: 'operate', what: 'listing received notifications' });
    return this.store.receivedNotifications.list(filter, skip, limit);
  }

  /** The notification as received. */
  triples(record: ReceivedNotificationRecord): Promise<Quad[]> {
    return this.store.receivedNotifications.triples(record);
  }
}

const senderKey = (sender: string, key: string) => `${sender} ${key}`;
const DAY_MS = 24 * 60 * 60 * 1000;
/** How often old notifications are looked for, and how many are removed per event-loop turn. */
const RETENTION_EVERY_MS = 60 * 60 * 1000;
const RETENTION_CHUNK = 1000;
