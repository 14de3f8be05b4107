import { writeJsonLd } from '../rdf/jsonld-writer.js';
import { quad, namedNode, type Quad } from '../rdf/terms.js';
import { OutboundError, type OutboundClient } from '../outbound/http-client.js';
import type { TokenSource } from '../outbound/tokens.js';
import type { GraphStore } from '../store/graph-store.js';
import { OUTBOX_PAGE_SPAN, deadLetterQuads, outboxNotificationTriples, outboxPage, readOutbox, readOutboxPage, type OutboxEntry } from '../store/schema/outbox.js';
import type { DomainEvent } from '../store/transaction.js';
import type { Subscription, SubscriptionIndex, Subscriptions } from './subscriptions.js';

export interface DeliveryOptions {
  initialBackoffMs: number;
  maxBackoffMs: number;
  retryWindowMs: number;
  /** Notifications of one queue kept in memory; the rest of its backlog is read from the store as it drains. */
  queueWindow: number;
  /** Notifications being sent at once, over all queues. */
  maxInFlight: number;
}

/**
 * One FIFO queue (subscriber and topic): a window of its first pending notifications, in
 * sequence order, and its retry state. The rest of its backlog stays in the store only and is
 * read a page at a time as the window drains, so memory does not grow with a subscriber's downtime.
 */
interface Queue {
  key: string;
  /** The queue's lowest-numbered pending notifications; every one beyond it has a higher number. */
  window: OutboxEntry[];
  /** Pending notifications in all: in the window, being settled, or in the store only. */
  pending: number;
  /** Delivered or dropped, out of the window, their commit not yet published. */
  settling: Set<string>;
  /** Number of the last notification that left an emptied window: the backlog continues after it. */
  floor: number;
  attempts: number;
  nextAttemptAt: number;
  busy: boolean;
  /** In the list of queues ready to send. */
  ready: boolean;
  timer?: NodeJS.Timeout;
  lastError?: string;
}

/** What became of one attempt to deliver a notification (counted by the metrics). */
export type DeliveryOutcome = 'delivered' | 'failed' | 'dropped' | 'dead_lettered';

/** How much the outbox holds now. */
export interface OutboxDepth {
  /** Notifications still to deliver, in all queues. */
  pending: number;
  /** Queues with notifications still to deliver. */
  queues: number;
  deadLetters: number;
}

export interface QueueView {
  queue: string;
  callback: string;
  pending: number;
  /** Of those, how many are held in memory (the queue's window). */
  inMemory: number;
  attempts: number;
  nextAttemptAt?: string;
  lastError?: string;
}

export interface DeadLetterView {
  notification: string;
  queue: string;
  subscription: string;
  callback: string;
  eventType: string;
  object?: string;
  queuedAt: string;
  deadLetteredAt: string;
  reason: string;
}

/** The `Retry-After` of an answer in milliseconds (seconds or an HTTP date), if it has a usable one. */
export function retryAfterMs(header: string | string[] | undefined, now = Date.now()): number | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** Exponential backoff with full jitter: a random delay up to min(cap, initial × 2^(attempt - 1)). */
export function backoffMs(attempt: number, options: Pick<DeliveryOptions, 'initialBackoffMs' | 'maxBackoffMs'>, random = Math.random): number {
  return Math.floor(random() * Math.min(options.maxBackoffMs, options.initialBackoffMs * 2 ** Math.min(attempt - 1, 40)));
}

/**
 * A status notification about the very request it is sent for (a SubscriptionRequest to its
 * subscriber, a ChangeRequest or AccessDelegationRequest to its requester): sent whatever the
 * request's status and whatever its recipient may read now.
 */
const isOwnStatus = (entry: OutboxEntry) => entry.triggeredBy === entry.subscription;

/**
 * Delivers the outbox: one FIFO queue per subscriber and topic, each with its own retry state,
 * so a slow or dead subscriber never holds up the others. A notification leaves the outbox in
 * the commit that records its delivery (2xx) or its drop (subscription ended, object no longer
 * readable). Failures retry with exponential backoff and full jitter (or the subscriber's
 * Retry-After) until the retry window has passed; then, or at once for 410 Gone (which also ends
 * the subscription) or a refused address, the notification becomes a dead letter, which an
 * operator can replay. Reacts to the after-commit stream only; a write never waits for it.
 * Memory holds a window of each queue (`queueWindow` notifications) and no dead letters: the
 * outbox itself lives in the store.
 */
export class Delivery {
  private readonly queues = new Map<string, Queue>();
  /** Retry windows restarted by a replay. */
  private readonly windowStart = new Map<string, number>();
  /** Highest notification number queued so far: paging a backlog stops there. */
  private lastSequence = 0;
  private running = false;
  /** Queues whose first notification may be sent now, in the order they became ready. */
  private readonly ready: Queue[] = [];
  private inFlight = 0;
  private sendsScheduled = false;
  /** Delivered or dropped notifications whose outbox graphs the next settle commit deletes. */
  private toSettle: { q: Queue; entry: OutboxEntry; stored: readonly Quad[] }[] = [];
  /**
   * The graphs of notifications paged into the windows, as the store holds them (canonical
   * literals: what is sent does not depend on where it was read): sent and settled without
   * reading the store again.
   */
  private readonly contents = new Map<string, readonly Quad[]>();
  /** Dead letters in the store (kept from the after-commit stream, so rebuilt at start). */
  private deadLetters = 0;
  private readonly index: SubscriptionIndex;

  constructor(
    private readonly store: GraphStore,
    private readonly subscriptions: Subscriptions,
    private readonly readRevision: (graph: string) => readonly Quad[],
    private readonly client: OutboundClient,
    private readonly tokens: TokenSource | undefined,
    private readonly options: DeliveryOptions,
    private readonly log: (message: string) => void,
    /** Told the outcome of every attempt (the metrics). */
    private readonly observe: (outcome: DeliveryOutcome) => void = () => {},
  ) {
    this.index = subscriptions.index;
  }

  onCommitted(events: readonly DomainEvent[]): void {
    for (const e of events) {
      switch (e.kind) {
        case 'notification-queued':
          this.lastSequence = Math.max(this.lastSequence, e.entry.sequence);
          this.enqueue(e.entry);
          break;
        case 'notification-settled':
          this.windowStart.delete(e.entry.iri);
          this.removeFromQueue(e.entry);
          break;
        case 'notification-dead-lettered':
          this.deadLetters += 1;
          this.windowStart.delete(e.entry.iri);
          this.removeFromQueue(e.entry);
          break;
        case 'notification-replayed':
          this.deadLetters -= 1;
          this.windowStart.set(e.entry.iri, Date.now());
          this.enqueue(e.entry);
          break;
        default:
          break;
      }
    }
  }

  /** Starts sending (after the outbox was rebuilt at start). */
  start(): void {
    this.running = true;
    for (const q of this.queues.values()) this.kick(q);
  }

  stop(): void {
    this.running = false;
    for (const q of this.queues.values()) clearTimeout(q.timer);
  }

  private queueOf(key: string): Queue {
    let q = this.queues.get(key);
    if (!q) {
      q = { key, window: [], pending: 0, settling: new Set(), floor: 0, attempts: 0, nextAttemptAt: 0, busy: false, ready: false };
      this.queues.set(key, q);
    }
    return q;
  }

  /** How many of a queue's pending notifications are in the store only. */
  private beyondWindow(q: Queue): number {
    return q.pending - q.settling.size - q.window.length;
  }

  /**
   * A notification joins its queue: into the window if it belongs among the first `queueWindow`
   * (a replayed dead letter may come before the window's last), else it stays in the store only.
   */
  private enqueue(entry: OutboxEntry): void {
    const q = this.queueOf(entry.queue);
    const full = this.beyondWindow(q) > 0 || q.window.length >= this.options.queueWindow;
    q.pending += 1;
    const { window } = q;
    const last = window.at(-1);
    if (full && !(last !== undefined && entry.sequence < last.sequence)) {
      if (window.length === 0) this.pageIn(q);
    } else {
      let i = window.length;
      while (i > 0 && window[i - 1].sequence > entry.sequence) i -= 1;
      window.splice(i, 0, entry);
      // Over the window: its last entry stays in the store only (paged in again later).
      if (window.length > this.options.queueWindow) this.contents.delete(window.pop()!.iri);
    }
    this.kick(q);
  }

  /** Delivered, dropped or dead: the commit that recorded it was published. */
  private removeFromQueue(entry: OutboxEntry): void {
    const q = this.queues.get(entry.queue);
    if (!q) return;
    q.pending -= 1;
    if (!q.settling.delete(entry.iri)) this.leaveWindow(q, entry);
    if (q.pending === 0 && !q.busy) {
      clearTimeout(q.timer);
      this.queues.delete(q.key);
    }
  }

  private leaveWindow(q: Queue, entry: OutboxEntry): void {
    const i = q.window.findIndex((e) => e.iri === entry.iri);
    if (i < 0) return;
    q.window.splice(i, 1);
    this.contents.delete(entry.iri);
    if (q.window.length === 0) q.floor = entry.sequence;
    if (q.window.length <= this.options.queueWindow / 4 && this.beyondWindow(q) > 0) this.pageIn(q);
  }

  /**
   * Fills the window from the store with the next pending notifications of the queue, page after
   * page of sequence numbers, until the window is full or the whole backlog is in it. Runs in the
   * tick of a commit or of a delivery, never across an await, so it sees the store as the stream
   * has published it.
   */
  private pageIn(q: Queue): void {
    const after = q.window.at(-1)?.sequence ?? q.floor;
    const wanted = Math.min(this.options.queueWindow - q.window.length, this.beyondWindow(q));
    const found: { entry: OutboxEntry; triples: readonly Quad[] }[] = [];
    for (let page = Math.floor(after / OUTBOX_PAGE_SPAN); found.length < wanted && page <= Math.floor(this.lastSequence / OUTBOX_PAGE_SPAN); page++) {
      for (const stored of readOutboxPage(this.store, outboxPage(q.key, page * OUTBOX_PAGE_SPAN))) {
        if (stored.entry.sequence > after && !q.settling.has(stored.entry.iri)) found.push(stored);
      }
    }
    for (const { entry, triples } of found.slice(0, wanted)) {
      q.window.push(entry);
      this.contents.set(entry.iri, triples);
    }
  }

  /** Makes `q` ready to send its first notification once its retry time has come. */
  private kick(q: Queue): void {
    if (!this.running || q.busy || q.ready || q.window.length === 0) return;
    const wait = q.nextAttemptAt - Date.now();
    if (wait > 0) {
      q.timer ??= setTimeout(() => {
        q.timer = undefined;
        this.kick(q);
      }, wait);
      return;
    }
    q.ready = true;
    this.ready.push(q);
    this.scheduleSends();
  }

  /**
   * Sends start in a later tick than the commit that queued them (a write's answer never waits
   * for them), at most `maxInFlight` at once, ready queues taking turns in order.
   */
  private scheduleSends(): void {
    if (this.sendsScheduled) return;
    this.sendsScheduled = true;
    setImmediate(() => {
      this.sendsScheduled = false;
      while (this.inFlight < this.options.maxInFlight && this.ready.length > 0) {
        const q = this.ready.shift()!;
        q.ready = false;
        if (!this.running || q.busy || q.window.length === 0) continue;
        q.busy = true;
        this.inFlight += 1;
        void this.attempt(q)
          .catch((err: Error) => this.failed(q, q.window[0], `delivery failed: ${err.message}`))
          .finally(() => {
            q.busy = false;
            this.inFlight -= 1;
            if (q.pending === 0) this.queues.delete(q.key);
            this.kick(q);
            this.scheduleSends();
          });
      }
    });
  }

  private async attempt(q: Queue): Promise<void> {
    const entry = q.window[0];
    const s = this.index.forRequest(entry.subscription);
    if (!isOwnStatus(entry)) {
      if (!s || !this.index.isActive(s)) return this.settle(q, entry, 'dropped');
      if (entry.object !== undefined && !this.index.mayRead(s, entry.object)) return this.settle(q, entry, 'dropped');
    }
    const stored = this.contents.get(entry.iri) ?? this.store.graphTriples(entry.graph);
    const body = writeJsonLd({ iri: entry.iri, triples: this.notificationTriples(entry, stored, isOwnStatus(entry) ? undefined : s) });
    const token = await this.tokens?.token();
    let res;
    try {
      res = await this.client.request(entry.callback, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/ld+json',
          Accept: 'application/ld+json',
          'Idempotency-Key': entry.iri,
          'webhook-id': entry.iri,
          'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
          ...(token ? { Authorization: `Bearer ${token}` } : {}),
        },
        body,
      });
    } catch (err) {
      if (err instanceof OutboundError && err.code === 'outbound_address_refused') return this.deadLetter(q, entry, err.message);
      return this.failed(q, entry, (err as Error).message);
    }
    if (res.status >= 200 && res.status < 300) {
      q.attempts = 0;
      q.lastError = undefined;
      return this.settle(q, entry, 'delivered', stored);
    }
    if (res.status === 410) {
      if (!s) return this.deadLetter(q, entry, `${entry.callback} answered 410 Gone`);
      await this.deadLetter(q, entry, `${entry.callback} answered 410 Gone: the subscription ends`);
      return this.subscriptions.end(s, `${entry.callback} answered 410 Gone`);
    }
    return this.failed(q, entry, `${entry.callback} answered ${res.status}`, retryAfterMs(res.headers['retry-after']));
  }

  /** The notification as sent: as queued, plus the object's revision when `s` (whose subscriber may read it) asks for the body. */
  private notificationTriples(entry: OutboxEntry, stored: readonly Quad[], s: Subscription | undefined): Quad[] {
    const triples = outboxNotificationTriples(entry.graph, stored);
    if (!s?.sendLogisticsObjectBody || entry.object === undefined || entry.revision === undefined) return triples;
    const object = this.index.revisions.get(entry.object);
    const revision = object && this.index.revisions.revision(object, entry.revision);
    return revision ? [...triples, ...this.readRevision(revision.graph)] : triples;
  }

  private failed(q: Queue, entry: OutboxEntry, reason: string, retryAfter?: number): Promise<void> | void {
    q.attempts += 1;
    q.lastError = reason;
    const now = Date.now();
    const windowEnd = (this.windowStart.get(entry.iri) ?? entry.queuedAt.getTime()) + this.options.retryWindowMs;
    if (now >= windowEnd) return this.deadLetter(q, entry, `not delivered within the retry window: ${reason}`);
    this.observe('failed');
    // The subscriber's Retry-After wins over the backoff, up to the end of the retry window.
    const delay = retryAfter !== undefined ? Math.min(retryAfter, windowEnd - now) : backoffMs(q.attempts, this.options);
    q.nextAttemptAt = now + delay;
  }

  /**
   * Delivered or dropped: it leaves the window at once, so the next one goes out, and its outbox
   * graph goes in a commit that delivery does not wait for, one commit for all settled in the same
   * tick. Should that commit fail, they are back at their place in their windows and are sent
   * again (duplicates at most, which receivers drop), after a backoff: a store that refuses writes
   * (full, failed journal) must not make it a tight resend loop.
   */
  private settle(q: Queue, entry: OutboxEntry, outcome: 'delivered' | 'dropped', stored = this.contents.get(entry.iri) ?? this.store.graphTriples(entry.graph)): void {
    this.observe(outcome);
    q.settling.add(entry.iri);
    this.leaveWindow(q, entry);
    if (this.toSettle.push({ q, entry, stored }) > 1) return;
    setImmediate(() => {
      const batch = this.toSettle;
      this.toSettle = [];
      const tx = this.store.begin({ delete: batch.flatMap(({ entry, stored }) => stored.map((t) => quad(t.subject, t.predicate, t.object, namedNode(entry.graph)))) });
      for (const { entry } of batch) tx.events.push({ kind: 'notification-settled', entry });
      this.store.commit(tx).catch((err: Error) => {
        this.log(`${batch.length} delivered notifications could not be taken out of the outbox; they will be sent again: ${err.message}`);
        for (const { q, entry } of batch) {
          q.settling.delete(entry.iri);
          q.pending -= 1;
          q.attempts += 1;
          q.lastError = `outbox not updated: ${err.message}`;
          q.nextAttemptAt = Date.now() + backoffMs(q.attempts, this.options);
          this.enqueue(entry);
        }
      });
    });
  }

  private async deadLetter(q: Queue, entry: OutboxEntry, reason: string): Promise<void> {
    const dead = { at: new Date(), reason };
    const tx = this.store.begin({ insert: deadLetterQuads(entry, dead) });
    tx.events.push({ kind: 'notification-dead-lettered', entry, dead });
    await this.store.commit(tx);
    this.observe('dead_lettered');
    this.windowStart.delete(entry.iri);
    q.attempts = 0;
    q.nextAttemptAt = 0;
    this.log(`notification ${entry.iri} is a dead letter: ${reason}`);
  }

  depth(): OutboxDepth {
    let [pending, queues] = [0, 0];
    for (const q of this.queues.values()) {
      pending += q.pending;
      if (q.pending > 0) queues += 1;
    }
    return { pending, queues, deadLetters: this.deadLetters };
  }

  queueViews(): QueueView[] {
    return [...this.queues.values()].map((q) => ({
      queue: q.key,
      callback: q.window[0]?.callback ?? '',
      pending: q.pending,
      inMemory: q.window.length,
      attempts: q.attempts,
      ...(q.nextAttemptAt > Date.now() ? { nextAttemptAt: new Date(q.nextAttemptAt).toISOString() } : {}),
      ...(q.lastError ? { lastError: q.lastError } : {}),
    }));
  }

  /** The dead letters, oldest first, as the store holds them. */
  deadLetterViews(): DeadLetterView[] {
    return readOutbox(this.store, { dead: true }).map(({ entry, dead }) => ({
      notification: entry.iri,
      queue: entry.queue,
      subscription: entry.subscription,
      callback: entry.callback,
      eventType: entry.eventType,
      ...(entry.object === undefined ? {} : { object: entry.object }),
      queuedAt: entry.queuedAt.toISOString(),
      deadLetteredAt: dead!.at.toISOString(),
      reason: dead!.reason,
    }));
  }

  /** Puts dead letters (all, or those named) back in their queues, in one commit; how many. */
  async replay(notifications?: readonly string[]): Promise<number> {
    const chosen = readOutbox(this.store, { dead: true }).filter((d) => notifications === undefined || notifications.includes(d.entry.iri));
    if (chosen.length === 0) return 0;
    const tx = this.store.begin({ delete: chosen.flatMap((d) => deadLetterQuads(d.entry, d.dead!)) });
    for (const d of chosen) tx.events.push({ kind: 'notification-replayed', entry: d.entry });
    await this.store.commit(tx);
    return chosen.length;
  }
}
