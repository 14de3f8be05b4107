import { randomUUID } from 'node:crypto';
import type { Authorizer, Caller } from '../access/authorizer.js';
import type { CallbackConfig, DecisionPolicy } from '../../config.js';
import { HttpError, badRequest, type ErrorDetail } from '../../errors.js';
import { shapeError, type Violation } from '../../shapes/validator.js';
import type { CargoOntology } from '../../rdf/ontology.js';
import { isValidIri, namedNode, quad, xsdLiteral, type Quad, type Term } from '../../rdf/terms.js';
import { groupBySubject, nameBlankNodes } from '../../rdf/triples.js';
import { INTERNAL_SCHEME, api, rdf, requestStatus, subscriptionEventType, xsd } from '../../rdf/vocab.js';
import type { DomainEvent } from '../../store/transaction.js';
import type { Recipient } from '../../store/schema/outbox.js';
import { currentStatus, type ActionRequestRecord } from '../requests/action-request-index.js';
import type { AcceptHandler, ActionRequests, RequestWrite } from '../requests/action-requests.js';
import type { LogisticsObjectEntry, RevisionIndex } from '../objects/revision-index.js';
import { NOTIFICATION_CONTENT_TYPE } from './subscription-offers.js';
import { checkTopic, inBody, parseTopicType, type Topic } from './topics.js';

/** What a Subscription asks for, as the publisher keeps it. */
export interface SubscriptionTerms extends Topic {
  subscriber: string;
  eventTypes: ReadonlySet<string>;
  notifyRequestStatusChange: boolean;
  sendLogisticsObjectBody: boolean;
  expiresAt?: Date;
}

/** An accepted-or-not subscription of this server (as publisher): its request and its terms. */
export interface Subscription extends SubscriptionTerms {
  request: ActionRequestRecord;
  /** Where its notifications are POSTed. */
  callback: string;
  /** Its FIFO queue: one per subscriber and topic. */
  queue: string;
  /** Who receives its notifications. */
  recipient: Recipient;
}

const EVENT_TYPES: readonly string[] = Object.values(subscriptionEventType);
const OBJECT_EVENT_TYPES: ReadonlySet<string> = new Set(EVENT_TYPES);

/** Subscriptions asking for something, with their recipients in the same order (see `SubscriptionIndex.asking`). */
export interface Asked {
  readonly subscriptions: readonly Subscription[];
  readonly recipients: readonly Recipient[];
  readonly startedThrough: number;
}
/** What `asking` found, valid until `until`. */
interface Asking extends Asked {
  subscriptions: Subscription[];
  recipients: Recipient[];
  startedThrough: number;
  until: number;
}
const NONE_ASKING: Asking = { subscriptions: [], recipients: [], startedThrough: 0, until: Infinity };
const isRequestEvent = (e: DomainEvent): e is Extract<DomainEvent, { request: ActionRequestRecord }> =>
  e.kind === 'action-request-created' || e.kind === 'action-request-decided' || e.kind === 'action-request-revoked';
/**
 * A commit that finishes a request (a final status: REJECTED, REVOKED, FAILED): its subscription ends, and nothing
 * asks for it again but the status notification the same commit queued for its subscriber, sent without it.
 */
const isFinishing = (e: DomainEvent): e is Extract<DomainEvent, { request: ActionRequestRecord }> =>
  e.kind === 'action-request-finished' ||
  ((e.kind === 'action-request-decided' || e.kind === 'action-request-revoked') && e.finished === true);
const newInternalIri = () => `${INTERNAL_SCHEME}${randomUUID()}`;

/** The node of a body that is the Subscription: the one typed api:Subscription, or else the one naming a subscriber. */
function subscriptionNode(quads: readonly Quad[]): Term {
  const typed = new Map(
    quads
      .filter((q) => q.predicate.value === rdf.type && q.object.value === api.Subscription)
      .map((q) => [q.subject.value, q.subject]),
  );
  const candidates =
    typed.size > 0
      ? typed
      : new Map(quads.filter((q) => q.predicate.value === api.hasSubscriber).map((q) => [q.subject.value, q.subject]));
  if (candidates.size !== 1) {
    throw badRequest(
      'invalid_subscription',
      candidates.size === 0 ? 'the body holds no api:Subscription' : 'the body must hold exactly one api:Subscription',
      rdf.type,
    );
  }
  return [...candidates.values()][0];
}

/**
 * Reads the terms of a Subscription node (`own`: its triples). Every problem is collected and
 * reported in one 400 naming the properties at fault. `checkExpiry`: a new subscription must not
 * have expired already (a stored one may have since).
 */
function readTerms(own: readonly Quad[], ontology: CargoOntology, checkExpiry = false): SubscriptionTerms {
  const values = (p: string) => own.filter((t) => t.predicate.value === p).map((t) => t.object);
  const problems: ErrorDetail[] = [];
  const fail = (message: string, property: string) => problems.push({ message, property });
  const one = (p: string, name: string): Term | undefined => {
    const v = values(p);
    if (v.length !== 1) fail(`a Subscription has exactly one ${name} (found ${v.length})`, p);
    return v.length === 1 ? v[0] : undefined;
  };
  const flag = (p: string, name: string): boolean => {
    const v = values(p);
    if (
      v.length > 1 ||
      (v.length === 1 && (v[0].termType !== 'Literal' || !['true', 'false', '1', '0'].includes(v[0].value)))
    )
      fail(`${name} must be one boolean`, p);
    return v.length === 1 && (v[0].value === 'true' || v[0].value === '1');
  };
  const subscriber = one(api.hasSubscriber, 'hasSubscriber');
  if (subscriber && (subscriber.termType !== 'NamedNode' || !/^https?:\/\//.test(subscriber.value)))
    fail('hasSubscriber must be the http(s) IRI of the subscribing Organization', api.hasSubscriber);
  const typeTerm = one(api.hasTopicType, 'hasTopicType');
  const topicTerm = one(api.hasTopic, 'hasTopic');
  let topic: Topic | undefined;
  try {
    if (typeTerm && topicTerm) {
      if (topicTerm.termType === 'BlankNode' || !isValidIri(topicTerm.value))
        throw inBody(api.hasTopic, 'hasTopic must be an IRI (xsd:anyURI)');
      topic = checkTopic(
        parseTopicType(typeTerm.value, api.hasTopicType, inBody),
        topicTerm.value,
        ontology,
        api.hasTopic,
        inBody,
      );
    }
  } catch (err) {
    if (!(err instanceof HttpError)) throw err;
    problems.push(...err.details);
  }
  const eventTypes = values(api.includeSubscriptionEventType);
  if (eventTypes.length === 0)
    fail(
      'includeSubscriptionEventType must name at least one of ' +
        'LOGISTICS_OBJECT_CREATED, LOGISTICS_OBJECT_UPDATED, LOGISTICS_EVENT_RECEIVED',
      api.includeSubscriptionEventType,
    );
  for (const e of eventTypes)
    if (!EVENT_TYPES.includes(e.value))
      fail(`${e.value} is not a SubscriptionEventType`, api.includeSubscriptionEventType);
  const contentTypes = values(api.hasContentType).map((t) => t.value.split(';')[0].trim().toLowerCase());
  if (contentTypes.length > 0 && !contentTypes.includes(NOTIFICATION_CONTENT_TYPE))
    fail(`notifications are sent as ${NOTIFICATION_CONTENT_TYPE} only`, api.hasContentType);
  const expires = values(api.expiresAt);
  let expiresAt: Date | undefined;
  if (
    expires.length > 1 ||
    (expires.length === 1 && (expires[0].termType !== 'Literal' || Number.isNaN(Date.parse(expires[0].value))))
  )
    fail('expiresAt must be one xsd:dateTime', api.expiresAt);
  else if (expires.length === 1) expiresAt = new Date(expires[0].value);
  if (expiresAt && expiresAt.getTime() <= Date.now() && checkExpiry)
    fail(`expiresAt ${expires[0].value} is not in the future`, api.expiresAt);
  const notify = flag(api.notifyRequestStatusChange, 'notifyRequestStatusChange');
  const body = flag(api.sendLogisticsObjectBody, 'sendLogisticsObjectBody');
  if (problems.length > 0) throw new HttpError(400, 'invalid_subscription', problems);
  return {
    subscriber: subscriber!.value,
    type: topic!.type,
    topic: topic!.topic,
    eventTypes: new Set(eventTypes.map((e) => e.value)),
    notifyRequestStatusChange: notify,
    sendLogisticsObjectBody: body,
    ...(expiresAt ? { expiresAt } : {}),
  };
}

/** hasTopic stored as xsd:anyURI, whatever form it came in. */
function normalisedTopic(t: Quad): Quad {
  if (t.predicate.value !== api.hasTopic) return t;
  return quad(t.subject, t.predicate, xsdLiteral(t.object.value, xsd.anyURI));
}

export interface SubscriptionsOptions {
  policy: DecisionPolicy;
  holder: string;
  /** Why a callback may not be called (the outbound address guard), or undefined. */
  refuseCallback: (url: string) => Promise<string | undefined>;
  /** How triples break the data model's shapes (none when validation is off). */
  shapeViolations: (triples: readonly Quad[]) => Violation[];
}

/**
 * The subscriptions of this server as publisher, accepted or not, kept from the after-commit
 * stream (and so rebuilt at start): which are active, and which match an object.
 */
export class SubscriptionIndex {
  private readonly byRequest = new Map<string, Subscription>();
  private readonly byObject = new Map<string, Subscription[]>();
  private readonly byType: Subscription[] = [];
  /** Per SubscriptionRequest, the last outbox entry written before it started (see `notifiedAfter`). */
  private readonly started = new Map<string, number>();
  /** What `asking` found, per what is asked and topic; forgotten whenever a subscription changes. */
  private readonly asked = new Map<string, Asking>();

  constructor(
    readonly ontology: CargoOntology,
    readonly revisions: RevisionIndex,
    private readonly access: Authorizer,
    private readonly callbacks: readonly CallbackConfig[],
  ) {}

  /** Where notifications for `subscriber` go: configured, or `{its origin}/notifications`. */
  callbackOf(subscriber: string): string {
    return (
      this.callbacks.find((c) => c.organization === subscriber)?.url ?? `${new URL(subscriber).origin}/notifications`
    );
  }

  onCommitted(events: readonly DomainEvent[]): void {
    for (const e of events) {
      // One whose request is finished is not kept (its start is still stored, read at start before it is ended).
      if (e.kind === 'subscription-started' && this.byRequest.has(e.subscription))
        this.started.set(e.subscription, e.after);
      if (e.kind === 'subscription-started' || (isRequestEvent(e) && e.request.type === api.SubscriptionRequest))
        this.asked.clear();
      if (isFinishing(e) && e.request.type === api.SubscriptionRequest) {
        const ended = this.byRequest.get(e.request.iri);
        if (ended) this.remove(ended);
        continue;
      }
      if (
        e.kind !== 'action-request-created' ||
        e.request.type !== api.SubscriptionRequest ||
        this.byRequest.has(e.request.iri)
      )
        continue;
      const stored = e.body ?? [];
      const link = stored.find((t) => t.subject.value === e.request.iri && t.predicate.value === api.hasSubscription);
      if (!link) continue;
      this.add(
        this.subscriptionOf(
          e.request,
          readTerms(
            stored.filter((t) => t.subject.value === link.object.value),
            this.ontology,
          ),
        ),
      );
    }
  }

  subscriptionOf(request: ActionRequestRecord, terms: SubscriptionTerms): Subscription {
    const [callback, queue] = [this.callbackOf(terms.subscriber), `${terms.subscriber} ${terms.type} ${terms.topic}`];
    return { ...terms, request, callback, queue, recipient: { queue, subscription: request.iri, callback } };
  }

  add(s: Subscription): void {
    this.asked.clear();
    this.byRequest.set(s.request.iri, s);
    if (s.type === api.LOGISTICS_OBJECT_TYPE) this.byType.push(s);
    else this.byObject.set(s.topic, [...(this.byObject.get(s.topic) ?? []), s]);
  }

  remove(s: Subscription): void {
    this.asked.clear();
    this.byRequest.delete(s.request.iri);
    this.started.delete(s.request.iri);
    const list = s.type === api.LOGISTICS_OBJECT_TYPE ? this.byType : this.byObject.get(s.topic);
    list?.splice(list.indexOf(s), 1);
  }

  forRequest(iri: string): Subscription | undefined {
    return this.byRequest.get(iri);
  }

  /** Accepted and not expired: notifications are planned and sent for it. */
  isActive(s: Subscription, now = Date.now()): boolean {
    return (
      s.request.statuses.length > 0 &&
      currentStatus(s.request) === requestStatus.ACCEPTED &&
      (s.expiresAt === undefined || s.expiresAt.getTime() > now)
    );
  }

  /**
   * Active subscriptions whose topic is `object` or a class of it asking for `eventType` (any other type is a status
   * notification, for those asking for status changes; ONE Record API, "Events", Event kinds). Every notifying write
   * asks, so the answer is cached until a subscription changes or one found expires; its arrays are shared by every
   * caller meanwhile and never changed. `startedThrough` is the latest `notifiedAfter` among them.
   */
  asking(object: string, mostSpecificType: string, eventType: string): Asked {
    const byObject = this.byObject.has(object)
      ? this.askingOf(`${eventType} ${object}`, this.byObject.get(object)!, eventType)
      : undefined;
    const byType =
      this.byType.length > 0
        ? this.askingOf(`${eventType} ${mostSpecificType} type`, this.byType, eventType, (s) =>
            this.ontology.isSubClassOf(mostSpecificType, s.topic),
          )
        : undefined;
    if (!byType || byType.subscriptions.length === 0) return byObject ?? NONE_ASKING;
    if (!byObject || byObject.subscriptions.length === 0) return byType;
    return {
      subscriptions: [...byObject.subscriptions, ...byType.subscriptions],
      recipients: [...byObject.recipients, ...byType.recipients],
      startedThrough: Math.max(byObject.startedThrough, byType.startedThrough),
    };
  }

  private askingOf(
    key: string,
    candidates: readonly Subscription[],
    eventType: string,
    topical: (s: Subscription) => boolean = () => true,
  ): Asking {
    const now = Date.now();
    const known = this.asked.get(key);
    if (known && now < known.until) return known;
    const asks = OBJECT_EVENT_TYPES.has(eventType)
      ? (s: Subscription) => s.eventTypes.has(eventType)
      : (s: Subscription) => s.notifyRequestStatusChange;
    const found: Asking = { subscriptions: [], recipients: [], startedThrough: 0, until: Infinity };
    for (const s of candidates) {
      if (!asks(s) || !topical(s) || !this.isActive(s, now)) continue;
      found.subscriptions.push(s);
      found.recipients.push(s.recipient);
      found.startedThrough = Math.max(found.startedThrough, this.notifiedAfter(s));
      if (s.expiresAt) found.until = Math.min(found.until, s.expiresAt.getTime());
    }
    this.asked.set(key, found);
    return found;
  }

  /**
   * The number of the last outbox entry written before `s` started (was accepted): it receives
   * only those after it. 0 for a subscription accepted before outbox entries had numbers.
   */
  notifiedAfter(s: Subscription): number {
    return this.started.get(s.request.iri) ?? 0;
  }

  /** True if the subscriber may read `object` now (notifications about it, and its body, depend on it). */
  mayRead(s: Subscription, object: string): boolean | Promise<boolean> {
    const entry = this.revisions.find(object);
    return entry instanceof Promise ? entry.then((e) => this.mayReadEntry(s, e)) : this.mayReadEntry(s, entry);
  }

  /** True if the subscriber may read the object of `entry` (none: no such object) now. */
  mayReadEntry(s: Subscription, entry: LogisticsObjectEntry | undefined): boolean {
    return (
      entry !== undefined &&
      this.access.allows(this.access.caller(s.subscriber), { kind: 'read-object', object: entry })
    );
  }
}

/**
 * The publisher side of subscriptions: POST /subscriptions makes a SubscriptionRequest (one of
 * the action requests), decided by the decision policy; 410 Gone from a subscriber ends one.
 */
export class Subscriptions implements AcceptHandler {
  constructor(
    readonly index: SubscriptionIndex,
    private readonly requests: ActionRequests,
    private readonly options: SubscriptionsOptions,
  ) {}

  /**
   * POST /subscriptions: records a SubscriptionRequest decided by the policy in the same commit (ONE Record API,
   * "POST /subscriptions"; docs/behaviour.md, "Subscriptions and notifications": `all`, `auto`, `manual`). A callback
   * the address guard refuses fails the request; `accept` (publisher-initiated) accepts whatever the policy.
   */
  async submit(
    body: readonly Quad[],
    caller: Caller,
    options: { accept?: boolean } = {},
  ): Promise<ActionRequestRecord> {
    const { index } = this;
    const named = nameBlankNodes(body, newInternalIri);
    // Found before the search below: an empty body has no quad to call it on, and is a 400.
    const subscriptionTerm = subscriptionNode(body);
    const node = named[body.findIndex((q) => q.subject.equals(subscriptionTerm))].subject;
    const own = groupBySubject(named, (t) => t.value).get(node.value) ?? [];
    // The data model's shapes first (one error detail per violation), on the body as received,
    // its Subscription typed as such even where the body leaves the type out.
    const violations = this.options.shapeViolations([
      ...named,
      quad(node as Quad['subject'], namedNode(rdf.type), namedNode(api.Subscription)),
    ]);
    if (violations.length > 0) throw shapeError(violations, 400);
    const terms = readTerms(own, index.ontology, true);
    const topic = terms.type === api.LOGISTICS_OBJECT_IDENTIFIER ? await index.revisions.find(terms.topic) : undefined;
    if (terms.type === api.LOGISTICS_OBJECT_IDENTIFIER && !topic) {
      throw badRequest(
        'invalid_subscription',
        `hasTopic ${terms.topic} is not a Logistics Object of this server`,
        api.hasTopic,
      );
    }
    if (!caller.internal && caller.agent !== terms.subscriber) {
      throw new HttpError(403, 'not_the_subscriber', {
        message: 'only the subscribing Organization (hasSubscriber) or an internal actor may subscribe',
        resource: terms.subscriber,
      });
    }
    const refused = await this.options.refuseCallback(index.callbackOf(terms.subscriber));
    const record = this.requests.newRecord(
      api.SubscriptionRequest,
      caller.agent,
      terms.type === api.LOGISTICS_OBJECT_IDENTIFIER ? [terms.topic] : [],
    );
    const write = this.requests.write();
    write.create(record, [
      quad(namedNode(record.iri), namedNode(api.hasSubscription), node as Quad['object']),
      ...named.filter((t) => t.subject.value === node.value).map(normalisedTopic),
    ]);
    const subscription = index.subscriptionOf(record, terms);
    // Known before its commit, so the commit can queue its own status notification.
    index.add(subscription);
    if (refused) {
      write.transition(record, {
        to: requestStatus.FAILED,
        by: this.options.holder,
        errors: [new HttpError(400, 'callback_refused', { message: refused, resource: terms.subscriber })],
      });
    } else if (options.accept || this.acceptsAtOnce(subscription, topic)) {
      write.transition(record, { to: requestStatus.ACCEPTED, by: this.options.holder });
    }
    try {
      await this.requests.commit(write);
    } catch (err) {
      index.remove(subscription);
      throw err;
    }
    return record;
  }

  /** `topic`: the object a subscription to one object is about. */
  private acceptsAtOnce(s: Subscription, topic: LogisticsObjectEntry | undefined): boolean {
    if (this.options.policy === 'all') return true;
    if (this.options.policy === 'manual') return false;
    return s.type === api.LOGISTICS_OBJECT_TYPE || this.index.mayReadEntry(s, topic);
  }

  /** The holder accepts a pending SubscriptionRequest (PATCH /action-requests/{id}) into `write`. */
  async accept(record: ActionRequestRecord, decidedBy: string, write: RequestWrite): Promise<undefined> {
    write.transition(record, { to: requestStatus.ACCEPTED, by: decidedBy });
    return undefined;
  }

  /** Ends a subscription whose subscriber answered 410 Gone: the request is revoked by the holder. */
  async end(s: Subscription, reason: string): Promise<void> {
    if (!this.index.isActive(s) || this.requests.isBusy(s.request)) return;
    const write = this.requests.write();
    write.transition(s.request, {
      to: requestStatus.REVOKED,
      by: this.options.holder,
      revoked: true,
      errors: [new HttpError(410, 'subscriber_gone', { message: reason, resource: s.subscriber }, 'Subscriber gone')],
    });
    await this.requests.commit(write);
  }
}
