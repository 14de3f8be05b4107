import { CallCancel, OutboundError, type OutboundClient, type OutboundResponse } from '../../outbound/http-client.js';
import type { TokenSource } from '../../outbound/tokens.js';
import type { Quad } from '../../rdf/terms.js';
import type { GraphStore } from '../../store/graph-store.js';
import type { RevisionRecord } from '../../store/schema/revisions.js';
import { parkedGraph, type ParkedNotification } from '../../store/schema/outbox.js';
import type { DomainEvent } from '../../store/transaction.js';
import { SendPacer, PAUSE_POLL_MS, type PacingOptions } from './delivery-pacing.js';
import { objectOf, pendingOf, QueueWindows, type Item, type Queue } from './delivery-queues.js';
import { EntryOrder, type EntryOrderOptions, type QueuedEntry } from './entry-order.js';
import { SettleCommits } from './delivery-settle.js';
import type { DeliveryGroup } from './delivery-groups.js';
import { NotificationBodies } from './notification-bodies.js';
import { notificationQuads } from './outbox.js';
import { backoffMs, retryAfterMs } from './retry-timing.js';
import type { Subscription, SubscriptionIndex, Subscriptions } from './subscriptions.js';

export interface DeliveryOptions extends PacingOptions {
  initialBackoffMs: number;
  maxBackoffMs: number;
  retryWindowMs: number;
  /** Notifications of one queue kept in memory; the rest of its backlog is read from the store as it drains. */
  queueWindow: number;
  /** Notifications of one queue being sent at once (in order, on one connection). */
  queueInFlight: number;
}

/** What came of one attempt, before it is recorded. */
type Attempt =
  | { outcome: 'delivered' | 'dropped' }
  | { outcome: 'dead'; reason: string }
  | { outcome: 'failed'; reason: string; retryAfter?: number };

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

/**
 * A status notification about the very request it is sent for (a SubscriptionRequest to its
 * subscriber, a ChangeRequest or AccessDelegationRequest to its requester): sent whatever the
 * request's status and whatever its recipient may read now.
 */
const isOwnStatus = (item: Item) =>
  (item.parked?.triggeredBy ?? item.content?.triggeredBy) === item.recipient.subscription;

/**
 * Notifications of entries published meanwhile that may wait for a pause in the requests before they join their queues.
 */
const ARRIVALS_HELD = 50_000;

/**
 * Delivers the outbox: one FIFO queue per subscriber and topic, each with its own retries, so a slow or dead
 * subscriber holds up no other (ONE Record API, "Events", Delivery model). This class makes the attempts and
 * settles what comes of them (retry, dead letter, replay); its parts, the windows, settle commits, pacing and
 * bodies, are described in docs/delivery.md, "How the outbox works".
 */
export class Delivery {
  private readonly settle: SettleCommits;
  private readonly windows: QueueWindows;
  private readonly pacer: SendPacer<Queue>;
  private readonly bodies: NotificationBodies;
  /** Entries are given to their queues in number order. */
  private readonly order: EntryOrder;
  /**
   * Entries published and not yet given to their queues: that is done in a later tick, not in the
   * answer's. `live`: handed over once sending had started (not read from the store at the start).
   */
  private arrived: (QueuedEntry & { late: boolean; live: boolean })[] = [];
  private arrivalsScheduled = false;
  /** Notifications of the entries in `arrived`. */
  private arrivedRecipients = 0;
  private running = false;
  /** Dead letters in the store (kept from the after-commit stream, so rebuilt at start). */
  private deadLetters = 0;
  private readonly index: SubscriptionIndex;

  constructor(
    store: GraphStore,
    private readonly subscriptions: Subscriptions,
    readRevision: (revision: RevisionRecord) => Promise<readonly Quad[]>,
    private readonly client: OutboundClient,
    private readonly tokens: TokenSource | undefined,
    private readonly options: DeliveryOptions,
    private readonly log: (message: string) => void,
    /** Told the outcome of every attempt (the metrics). */
    private readonly observe: (outcome: DeliveryOutcome) => void = () => {},
    /** True while API requests are being answered. */
    private readonly serving: () => boolean = () => false,
    /**
     * Which numbers commits of this process are writing; how long a number another process may be writing is waited
     * for.
     */
    order: Omit<EntryOrderOptions, 'log'> = { inFlight: () => false, othersWaitMs: 0 },
    /** The group of queues this delivers (several processes delivering, `delivery-groups.ts`); all when absent. */
    private readonly group?: DeliveryGroup,
  ) {
    this.index = subscriptions.index;
    this.order = new EntryOrder({ ...order, log }, (queued, late) => this.arrive(queued, late));
    this.settle = new SettleCommits(
      group?.settleWriter ?? store,
      {
        lowWater: () => this.windows.lowWater(Math.min(this.lowestArrived() - 1, this.settle.lastSequence)),
        // Below a number still awaited, and below an entry not in its queues yet (a late one moves their positions back
        // only once there).
        recordCap: () => Math.min(this.order.oldestAwaited() ?? Number.POSITIVE_INFINITY, this.lowestArrived()) - 1,
        knownEntry: (sequence) => this.windows.knownEntry(sequence),
        serving,
        backoffMs: (failures) => backoffMs(failures, options),
        log,
      },
      group,
    );
    this.windows = new QueueWindows(store, this.index, this.settle, options.queueWindow, (q) => this.kick(q), group);
    this.pacer = new SendPacer<Queue>(options, serving, (q) => this.startNext(q));
    this.bodies = new NotificationBodies(store, this.index, readRevision);
  }

  onCommitted(events: readonly DomainEvent[]): void {
    for (const e of events) {
      if (e.kind === 'outbox-compacted') this.windows.forgetEntries(this.settle.compactedThrough ?? 0, e.through);
      if (e.kind !== 'notification-queued') this.settle.onCommitted(e);
      // Group 0 removes the entries every group is past: another group's moving on may let it.
      if (e.kind === 'outbox-group-advanced' && this.running && this.group?.index === 0) this.settle.schedule();
      switch (e.kind) {
        case 'notification-queued':
          this.order.add({ entry: e.entry, recipients: e.recipients });
          break;
        case 'outbox-numbers-released':
          this.order.released(e.numbers);
          break;
        case 'notification-dead-lettered':
          this.deadLetters += 1;
          break;
        case 'notification-replayed':
          this.deadLetters -= 1;
          this.windows.enqueueParked(e.notification);
          break;
        default:
          break;
      }
    }
  }

  /** The lowest number of the entries published and not yet given to their queues (`arrived`). */
  private lowestArrived(): number {
    return this.arrived.reduce((low, a) => Math.min(low, a.entry.sequence), Number.POSITIVE_INFINITY);
  }

  /** An entry's turn (`late`: after entries numbered after it). */
  private arrive(queued: QueuedEntry, late: boolean): void {
    this.settle.onCommitted({ kind: 'notification-queued', entry: queued.entry });
    this.arrived.push({ ...queued, late, live: this.running });
    this.arrivedRecipients += queued.recipients?.length ?? queued.entry.recipients;
    this.scheduleArrivals();
  }

  /**
   * The entries a commit published go to their queues in a later tick: working out and queueing
   * the notifications of an entry with many recipients is not part of the answer to the write.
   * While API requests are being answered and queues have notifications ready that wait for their
   * turn, more would not go sooner: they join in a pause of the requests, or once those are sent,
   * not between two answers (a backlog of more than `ARRIVALS_HELD` recipients joins at once).
   */
  private scheduleArrivals(delay = 0): void {
    if (this.arrivalsScheduled) return;
    this.arrivalsScheduled = true;
    const run = () => {
      this.arrivalsScheduled = false;
      if (this.settle.stopped || this.arrived.length === 0) return;
      if (this.arrivedRecipients <= ARRIVALS_HELD && this.pacer.waiting && this.serving())
        return this.scheduleArrivals(PAUSE_POLL_MS);
      const entries = this.arrived;
      this.arrived = [];
      this.arrivedRecipients = 0;
      for (const { entry, recipients, late, live } of entries) {
        const missed = this.windows.enqueue(entry, recipients, late);
        // An entry published while sending goes to every queue it is for: none past it, none without it.
        if (missed && live)
          this.log(
            `outbox entry ${entry.sequence}${entry.content.object ? ` about ${entry.content.object}` : ''} ` +
              `went to no queue: ${missed}`,
          );
      }
      // A group's position follows the entries, whether its queues took them or not (the entries every group is
      // past are removed).
      if (this.group && this.running) this.settle.schedule();
    };
    if (delay > 0) setTimeout(run, delay);
    else setImmediate(run);
  }

  /** Starts sending (after the outbox was rebuilt at start). */
  start(): void {
    this.order.live(this.settle.lastSequence, this.settle.compactedThrough ?? 0);
    this.running = true;
    for (const q of this.windows.all()) this.kick(q);
    if (this.group) this.settle.schedule();
  }

  /**
   * Stops sending (calls under way are cancelled: what comes of them is not recorded); records where
   * every queue stands (a restart sends nothing delivered again), then touches the store no more.
   */
  async stop(): Promise<void> {
    this.running = false;
    this.order.stop();
    this.pacer.stop();
    for (const q of this.windows.all()) {
      clearTimeout(q.timer);
      for (const item of q.window) item.attempt?.cancel();
    }
    await this.settle.stop();
  }

  /**
   * The next notification `q` may send now, if any: its first unsettled one while retrying, else its first waiting one
   * within the per-queue limit.
   */
  private nextOf(q: Queue): Item | undefined {
    if (!this.running || q.nextAttemptAt > Date.now()) return undefined;
    if (q.retrying) {
      const head = q.window.find((i) => i.state !== 'settled');
      return q.sending === 0 && head?.state === 'waiting' ? head : undefined;
    }
    return q.sending < this.options.queueInFlight ? q.window.find((i) => i.state === 'waiting') : undefined;
  }

  /** Makes `q` ready to send once its retry time has come. */
  private kick(q: Queue): void {
    if (!this.running || q.ready || q.window.length === 0) return;
    const wait = q.nextAttemptAt - Date.now();
    if (wait > 0) {
      q.timer ??= setTimeout(() => {
        q.timer = undefined;
        this.kick(q);
      }, wait);
      return;
    }
    if (!this.nextOf(q)) return;
    this.pacer.add(q);
  }

  /** `q`'s turn to send: its next notification goes, if it has one now. */
  private startNext(q: Queue): boolean {
    const item = this.nextOf(q);
    if (!item) {
      // Its state changed since it became ready (a failure set a retry time): waits for that.
      this.kick(q);
      return false;
    }
    this.send(q, item);
    // Its next notification may go too, after the other ready queues had their turn.
    this.kick(q);
    return true;
  }

  private send(q: Queue, item: Item): void {
    const attempt = new CallCancel();
    item.state = 'sending';
    item.attempt = attempt;
    q.sending += 1;
    void this.attempt(q, item, attempt)
      .catch((err: Error): Attempt => ({ outcome: 'failed', reason: `delivery failed: ${err.message}` }))
      .then((result) => {
        q.sending -= 1;
        // What came of an attempt a failure before it discarded does not count: the notification goes again.
        if (item.attempt === attempt) {
          item.attempt = undefined;
          this.record(q, item, result);
        }
        this.kick(q);
        this.pacer.ended();
      });
  }

  /** Sends one notification (or finds it is to be dropped); what came of it. `cancel` ends the call. */
  private async attempt(q: Queue, item: Item, cancel: CallCancel): Promise<Attempt> {
    const { recipient } = item;
    const s = this.index.forRequest(recipient.subscription);
    const own = isOwnStatus(item);
    if (!own) {
      const object = objectOf(item);
      const about = object === undefined ? '' : ` about ${object}`;
      // Said once per notification: what a subscriber missed, and why, is an operator's question.
      if (!s || !this.index.isActive(s))
        return this.dropped(item, `${about}: its subscription ${recipient.subscription} is not active`);
      if (object !== undefined && !(await this.index.mayRead(s, object)))
        return this.dropped(
          item,
          `${about}: the subscriber may not read that object (or this process does not know it)`,
        );
    }
    // Handed to the client in the order sent, whatever the time its body takes to read.
    const turn = q.handedOver;
    let handOver!: () => void;
    q.handedOver = new Promise<void>((resolve) => (handOver = resolve));
    try {
      return await this.call(item, s, own, cancel, turn, handOver);
    } finally {
      handOver();
    }
  }

  private dropped(item: Item, why: string): Attempt {
    this.log(`notification ${item.iri} dropped${why}`);
    return { outcome: 'dropped' };
  }

  private async call(
    item: Item,
    s: Subscription | undefined,
    own: boolean,
    cancel: CallCancel,
    turn: Promise<void> | undefined,
    handOver: () => void,
  ): Promise<Attempt> {
    const { recipient } = item;
    const body = await this.bodies.body(item, own ? undefined : s);
    const token = await this.tokens?.token();
    await turn;
    const headers: Record<string, string> = {
      'Content-Type': 'application/ld+json',
      Accept: 'application/ld+json',
      'Idempotency-Key': item.iri,
      'webhook-id': item.iri,
      'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
    };
    if (token) headers.Authorization = `Bearer ${token}`;
    let res: OutboundResponse;
    try {
      const call = this.client.requestInOrder(
        recipient.callback,
        { method: 'POST', headers, body },
        recipient.queue,
        this.options.queueInFlight,
        cancel,
      );
      handOver();
      res = await call;
    } catch (err) {
      if (err instanceof OutboundError && err.code === 'outbound_address_refused')
        return { outcome: 'dead', reason: err.message };
      return { outcome: 'failed', reason: (err as Error).message };
    }
    if (res.status >= 200 && res.status < 300) return { outcome: 'delivered' };
    if (res.status === 410) {
      if (!s) return { outcome: 'dead', reason: `${recipient.callback} answered 410 Gone` };
      // Ended before the queue goes on: its next notifications are dropped, not sent to be refused again.
      await this.subscriptions
        .end(s, `${recipient.callback} answered 410 Gone`)
        .catch((err: Error) => this.log(`subscription ${s.request.iri} could not be ended: ${err.message}`));
      return { outcome: 'dead', reason: `${recipient.callback} answered 410 Gone: the subscription ends` };
    }
    return {
      outcome: 'failed',
      reason: `${recipient.callback} answered ${res.status}`,
      retryAfter: retryAfterMs(res.headers['retry-after']),
    };
  }

  /** Records what came of an attempt: settled (delivered, dropped, dead), or to be retried. */
  private record(q: Queue, item: Item, result: Attempt): void {
    if (result.outcome === 'failed') {
      const now = Date.now();
      const windowEnd = (item.retryFrom ?? item.queuedAt.getTime()) + this.options.retryWindowMs;
      if (now < windowEnd) {
        item.state = 'waiting';
        q.attempts += 1;
        q.lastError = result.reason;
        q.retrying = true;
        this.observe('failed');
        this.sendAgainAfter(q, item);
        // The subscriber's Retry-After wins over the backoff, up to the end of the retry window.
        const delay =
          result.retryAfter !== undefined
            ? Math.min(result.retryAfter, windowEnd - now)
            : backoffMs(q.attempts, this.options);
        q.nextAttemptAt = Math.max(q.nextAttemptAt, now + delay);
        return;
      }
      this.record(q, item, { outcome: 'dead', reason: `not delivered within the retry window: ${result.reason}` });
      return;
    }
    // Order is back once the notification a failure held up is settled.
    if (q.window.find((i) => i.state !== 'settled') === item) q.retrying = false;
    item.state = 'settled';
    item.delivered = result.outcome === 'delivered';
    q.unsettled -= 1;
    if (result.outcome === 'dead') {
      this.observe('dead_lettered');
      this.deadLetter(item, result.reason);
      q.attempts = 0;
      q.nextAttemptAt = 0;
    } else {
      this.observe(result.outcome);
      if (result.outcome === 'delivered') {
        q.attempts = 0;
        q.lastError = undefined;
      }
    }
    this.windows.advance(q);
  }

  /**
   * After `failed` failed, the notifications after it in its queue that are being sent or were
   * delivered meanwhile (pipelined behind it) go again once it is delivered: in flight, their
   * calls are cancelled and what comes of them is ignored. So the last copy of each a subscriber
   * gets comes in queue order, even where a copy got there before the retry of the one that
   * failed; the copies before are duplicates, which subscribers drop by @id.
   */
  private sendAgainAfter(q: Queue, failed: Item): void {
    for (let i = q.window.indexOf(failed) + 1; i < q.window.length; i++) {
      const later = q.window[i];
      if (later.state === 'sending') {
        later.attempt?.cancel();
        later.attempt = undefined;
        later.state = 'waiting';
      } else if (later.state === 'settled' && later.delivered) {
        later.delivered = false;
        later.state = 'waiting';
        q.unsettled += 1;
      }
    }
  }

  /** The parked graph (a dead letter) of a notification given up on, written by the next settle commit. */
  private deadLetter(item: Item, reason: string): void {
    const dead = { at: new Date(), reason };
    item.deadLettered = true;
    this.log(`notification ${item.iri} is a dead letter: ${reason}`);
    if (item.parked) {
      this.settle.deadLetter({ parked: item.parked, triples: [], dead, isNew: false });
      return;
    }
    const content = item.content!;
    const parked: ParkedNotification = {
      iri: item.iri,
      graph: parkedGraph(item.iri.slice(item.iri.lastIndexOf('/') + 1)),
      queue: item.recipient.queue,
      sequence: item.sequence,
      queuedAt: item.queuedAt,
      subscription: item.recipient.subscription,
      callback: item.recipient.callback,
      eventType: content.eventType,
      ...(content.object === undefined ? {} : { object: content.object }),
      ...(content.revision === undefined ? {} : { revision: content.revision }),
      ...(content.triggeredBy === undefined ? {} : { triggeredBy: content.triggeredBy }),
    };
    this.settle.deadLetter({ parked, triples: notificationQuads(item.iri, content), dead, isNew: true });
  }

  depth(): OutboxDepth {
    let [pending, queues] = [this.arrivedRecipients, 0];
    for (const q of this.windows.all()) {
      pending += pendingOf(q);
      if (pendingOf(q) > 0) queues += 1;
    }
    return { pending, queues, deadLetters: this.deadLetters };
  }

  queueViews(): QueueView[] {
    return [...this.windows.all()]
      .filter((q) => pendingOf(q) > 0)
      .map((q) => ({
        queue: q.key,
        callback: q.callback,
        pending: pendingOf(q),
        inMemory: q.unsettled,
        attempts: q.attempts,
        ...(q.nextAttemptAt > Date.now() ? { nextAttemptAt: new Date(q.nextAttemptAt).toISOString() } : {}),
        ...(q.lastError ? { lastError: q.lastError } : {}),
      }));
  }
}
