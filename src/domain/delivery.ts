import { BoundedCache } from '../bounded-cache.js';
import { writeJsonLd } from '../rdf/jsonld-writer.js';
import { namedNode, quad, type Quad } from '../rdf/terms.js';
import { CallCancel, OutboundError, type OutboundClient } from '../outbound/http-client.js';
import type { TokenSource } from '../outbound/tokens.js';
import type { GraphStore } from '../store/graph-store.js';
import { payloadTriples } from '../store/schema/annotated-graph.js';
import {
  compactedThroughQuad,
  deadLetterQuads,
  movedQueuePosition,
  outboxEntryGraph,
  outboxEntryQuads,
  parkedBefore,
  parkedGraph,
  parkedNotificationQuads,
  readOutboxEntry,
  readParkedNotifications,
  type DeadLetter,
  type NotificationContent,
  type OutboxEntry,
  type ParkedNotification,
  type ParkedPosition,
  type Recipient,
} from '../store/schema/outbox.js';
import type { DomainEvent, WriteTransaction } from '../store/transaction.js';
import { notificationIri, notificationQuads, recipientsOf } from './outbox.js';
import type { Subscription, SubscriptionIndex, Subscriptions } from './subscriptions.js';

export interface DeliveryOptions {
  initialBackoffMs: number;
  maxBackoffMs: number;
  retryWindowMs: number;
  /** Notifications of one queue kept in memory; the rest of its backlog is read from the store as it drains. */
  queueWindow: number;
  /** Notifications being sent at once, over all queues. */
  maxInFlight: number;
  /** The same while API requests are being answered. */
  inFlightWhileServing: number;
  /** Notifications started per second, at most, while API requests are being answered. */
  sendsPerSecondWhileServing: number;
  /** Notifications of one queue being sent at once (in order, on one connection). */
  queueInFlight: number;
}

/** One notification to one recipient, in its queue's window. */
interface Item {
  /** Its @id. */
  iri: string;
  /** Number of the outbox entry it comes from. */
  sequence: number;
  queuedAt: Date;
  recipient: Recipient;
  /** What it says (a notification from an entry). */
  content?: NotificationContent;
  /** A replayed dead letter: what it says is in its own graph. */
  parked?: ParkedNotification;
  /** When its retry window started, if not when it was queued (a replay restarts it). */
  retryFrom?: number;
  /** Given up on: its graph is (again) a dead letter. */
  deadLettered?: boolean;
  /** Settled by a 2xx (not dropped, not given up on). */
  delivered?: boolean;
  /** The attempt under way while it is being sent; cancelled when one before it in its queue fails. */
  attempt?: CallCancel;
  state: 'waiting' | 'sending' | 'settled';
}

/**
 * One FIFO queue (subscriber and topic): a window of its first notifications in order, and its
 * retry state. The rest of its backlog stays in the store only (entries after `cursor`) and is
 * read as the window drains, so memory does not grow with a subscriber's downtime.
 */
interface Queue {
  key: string;
  callback: string;
  /** Replayed dead letters first, then notifications of entries up to `cursor`, in entry order; settled ones leave from the front. */
  window: Item[];
  /** Entries up to this number were looked at for this queue: their notifications to it are in the window or settled. */
  cursor: number;
  /** Notifications of entries after `cursor`: in the store only. */
  backlog: number;
  /** Replayed dead letters after `parkedCursor`: in the store only. */
  parkedBacklog: number;
  /** The last replayed dead letter read into the window (they come in `parkedBefore` order). */
  parkedCursor?: ParkedPosition;
  /** Items of the window not settled yet. */
  unsettled: number;
  sending: number;
  attempts: number;
  nextAttemptAt: number;
  /** A send failed: only the first unsettled notification goes until it is delivered (keeps the order). */
  retrying: boolean;
  /** In the list of queues ready to send. */
  ready: boolean;
  timer?: NodeJS.Timeout;
  lastError?: string;
}

/** What came of one attempt, before it is recorded. */
type Attempt = { outcome: 'delivered' | 'dropped' } | { outcome: 'dead'; reason: string } | { outcome: 'failed'; reason: string; retryAfter?: number };

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
const isOwnStatus = (item: Item) => (item.parked?.triggeredBy ?? item.content?.triggeredBy) === item.recipient.subscription;
const objectOf = (item: Item) => item.parked?.object ?? item.content?.object;
const revisionOf = (item: Item) => item.parked?.revision ?? item.content?.revision;

/** At most this many entries are looked at in one go when paging a queue's backlog in (the rest in a later tick). */
const PAGE_IN_SCAN = 2000;
/** At most this many entries are removed in one commit. */
const COMPACT_BATCH = 1000;
/**
 * Settle commits are at least this far apart (more while API requests are being answered): each
 * records every queue that moved meanwhile, so a queue that moved many times is written once, and
 * removes the entries every queue is past in one go. (After a crash, what was delivered since the
 * last one is sent again: duplicates, which subscribers drop by @id.)
 */
const SETTLE_INTERVAL_MS = 50;
/**
 * A queue's position is written once it is more than this many entries past the entries removed
 * (up to which every queue has settled everything, so no queue needs a position there): queues
 * that keep up with the others (1,000 subscriptions to one object move together) cost no write
 * per entry. After a crash such a queue receives again at most the notifications of these entries
 * (duplicates, dropped by @id); a queue further ahead (another subscriber lags) is written as it moves,
 * and so is one whose dead letter is written.
 */
const POSITION_SLACK = 16;
const SETTLE_INTERVAL_WHILE_SERVING_MS = 250;
/** While sends are held back for API requests, how often it is looked whether they paused. */
const PAUSE_POLL_MS = 5;
/** Notifications of entries published meanwhile that may wait for a pause in the requests before they join their queues. */
const ARRIVALS_HELD = 50_000;
/** Recipients (plus one per entry) of the entries kept read for queues paging their backlog in. */
const ADDRESSED_ENTRIES_KEPT = 100_000;

/** Characters of the notification bodies kept for the other recipients of their entries. */
const BODY_CHARACTERS_KEPT = 8_000_000;

/** An outbox entry with its recipients by queue, as queues page it in. */
interface AddressedEntry {
  entry: OutboxEntry;
  byQueue: ReadonlyMap<string, readonly Recipient[]>;
  recipients: number;
}

/**
 * Delivers the outbox: one FIFO queue per subscriber and topic, each with its own retry state,
 * so a slow or dead subscriber never holds up the others. Each outbox entry is a notification to
 * every subscription it matches (see `recipientsOf`); a queue records, in the store, the entry up
 * to which it has settled everything (delivered with a 2xx, dropped because the subscription ended
 * or the object is no longer readable, or dead-lettered), one position update per queue for all
 * settled in the same tick; an entry is removed once every queue is past it. Failures retry with
 * exponential backoff and full jitter (or the subscriber's Retry-After) until the retry window
 * has passed; then, or at once for 410 Gone (which also ends the subscription) or a refused
 * address, the notification becomes a dead letter (a graph of its own), which an operator can
 * replay. Reacts to the after-commit stream only; a write never waits for it. Memory holds a
 * window of each queue (`queueWindow` notifications) and no dead letters.
 */
export class Delivery {
  private readonly queues = new Map<string, Queue>();
  /** Per queue, the entry up to which it settled everything, in memory and as last committed. */
  private readonly positions = new Map<string, number>();
  private readonly storedPositions = new Map<string, number>();
  /** Queues whose position in memory is ahead of the stored one. */
  private readonly moved = new Set<string>();
  /** Highest entry number published so far. */
  private lastSequence = 0;
  /** Entries published and not yet given to their queues: that is done in a later tick, not in the answer's. */
  private arrived: { entry: OutboxEntry; recipients?: readonly Recipient[] }[] = [];
  private arrivalsScheduled = false;
  /** Notifications of the entries in `arrived`. */
  private arrivedRecipients = 0;
  /** Entries up to this number are gone from the store (undefined: none seen yet). */
  private compactedThrough: number | undefined;
  private running = false;
  private stopped = false;
  /** Queues that may send now, in the order they became ready. */
  private readonly ready: Queue[] = [];
  private inFlight = 0;
  private sendsScheduled = false;
  /** Sends that may start while serving (a token bucket refilled at `sendsPerSecondWhileServing`), as of `tokensAt`. */
  private servingTokens = 0;
  private tokensAt = 0;
  private resumeTimer?: NodeJS.Timeout;
  /** What the next settle commit writes, besides the queues' positions. */
  private parkedToRemove: ParkedNotification[] = [];
  private deadToWrite: { parked: ParkedNotification; triples: readonly Quad[]; dead: DeadLetter; isNew: boolean }[] = [];
  private settleScheduled = false;
  /** The settle commit under way. */
  private settlement?: Promise<void>;
  private settleFailures = 0;
  private lastSettleAt = 0;
  /** Dead letters in the store (kept from the after-commit stream, so rebuilt at start). */
  private deadLetters = 0;
  private readonly index: SubscriptionIndex;
  /**
   * Entries read for queues paging in their backlog (null: no longer in the store), shared by
   * them: lagging queues (a subscriber server down with many subscriptions) read, parse and
   * address each entry once, not once per queue.
   */
  private readonly addressedEntries = new BoundedCache<number, AddressedEntry | null>(ADDRESSED_ENTRIES_KEPT, (a) => 1 + (a?.recipients ?? 0));
  /** Per entry (and with the object's body or not), its notifications' body around the @id. */
  private readonly bodies = new BoundedCache<string, { before: string; after: string }>(BODY_CHARACTERS_KEPT, (b) => b.before.length + b.after.length);

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
    /** True while API requests are being answered. */
    private readonly serving: () => boolean = () => false,
  ) {
    this.index = subscriptions.index;
  }

  onCommitted(events: readonly DomainEvent[]): void {
    for (const e of events) {
      switch (e.kind) {
        case 'notification-queued':
          this.lastSequence = Math.max(this.lastSequence, e.entry.sequence);
          this.compactedThrough ??= e.entry.sequence - 1;
          this.arrived.push({ entry: e.entry, recipients: e.recipients });
          this.arrivedRecipients += e.recipients?.length ?? e.entry.recipients;
          this.scheduleArrivals();
          break;
        case 'outbox-advanced':
          this.storedPositions.set(e.queue, e.through);
          if (e.through >= (this.positions.get(e.queue) ?? 0)) {
            this.positions.set(e.queue, e.through);
            this.moved.delete(e.queue);
          }
          this.lastSequence = Math.max(this.lastSequence, e.through);
          break;
        case 'outbox-compacted':
          if (this.addressedEntries.size > 0) for (let sequence = (this.compactedThrough ?? 0) + 1; sequence <= e.through; sequence++) this.addressedEntries.delete(sequence);
          this.compactedThrough = Math.max(this.compactedThrough ?? 0, e.through);
          // Positions up to the entries removed need no write: no queue can be behind them.
          for (const queue of this.moved) if (this.positions.get(queue)! <= this.compactedThrough) this.moved.delete(queue);
          this.lastSequence = Math.max(this.lastSequence, e.through);
          break;
        case 'notification-dead-lettered':
          this.deadLetters += 1;
          break;
        case 'notification-replayed':
          this.deadLetters -= 1;
          this.enqueueParked(e.notification);
          break;
        default:
          break;
      }
    }
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
      if (this.stopped || this.arrived.length === 0) return;
      if (this.arrivedRecipients <= ARRIVALS_HELD && this.ready.length > 0 && this.serving()) return this.scheduleArrivals(PAUSE_POLL_MS);
      const entries = this.arrived;
      this.arrived = [];
      this.arrivedRecipients = 0;
      for (const { entry, recipients } of entries) this.enqueue(entry, recipients);
    };
    if (delay > 0) setTimeout(run, delay);
    else setImmediate(run);
  }

  /** Starts sending (after the outbox was rebuilt at start). */
  start(): void {
    this.running = true;
    for (const q of this.queues.values()) this.kick(q);
  }

  /** Stops sending; records where every queue stands (a restart sends nothing delivered again), then touches the store no more. */
  async stop(): Promise<void> {
    this.running = false;
    clearTimeout(this.resumeTimer);
    for (const q of this.queues.values()) clearTimeout(q.timer);
    await this.client.close();
    // One settle commit at a time: the last one starts in the tick the one before it ended in.
    while (this.settlement) await this.settlement;
    if (!this.stopped) await this.settle(0);
    // Nothing reads or writes the store once it may be closing.
    this.stopped = true;
  }

  private queueOf(recipient: Recipient): Queue {
    let q = this.queues.get(recipient.queue);
    if (!q) {
      const cursor = this.positions.get(recipient.queue) ?? 0;
      q = { key: recipient.queue, callback: recipient.callback, window: [], cursor, backlog: 0, parkedBacklog: 0, unsettled: 0, sending: 0, attempts: 0, nextAttemptAt: 0, retrying: false, ready: false };
      this.queues.set(q.key, q);
    }
    return q;
  }

  private itemsOf(entry: OutboxEntry, recipients: readonly Recipient[]): Item[] {
    return recipients.map((recipient) => ({ iri: notificationIri(entry, recipient), sequence: entry.sequence, queuedAt: entry.queuedAt, recipient, content: entry.content, state: 'waiting' }));
  }

  /**
   * An entry's notifications join their queues: into the window while it has room and nothing of
   * the queue waits in the store only, else they stay in the store only. Queues already past the
   * entry (at start: settled before a restart) or that read it from the store meanwhile skip it.
   */
  private enqueue(entry: OutboxEntry, recipients?: readonly Recipient[]): void {
    const addressed = this.addressed(entry, recipients);
    // Queues paging it in later, and its removal, need not read it from the store.
    this.addressedEntries.set(entry.sequence, addressed);
    for (const [key, recipients] of addressed.byQueue) {
      if (entry.sequence <= (this.positions.get(key) ?? 0) || entry.sequence <= (this.queues.get(key)?.cursor ?? 0)) continue;
      const q = this.queueOf(recipients[0]);
      if (q.backlog > 0 || q.unsettled >= this.options.queueWindow) {
        q.backlog += recipients.length;
      } else {
        q.window.push(...this.itemsOf(entry, recipients));
        q.unsettled += recipients.length;
        q.cursor = entry.sequence;
      }
      this.kick(q);
    }
  }

  /** An entry with its recipients by queue (`recipientsOf` unless known). */
  private addressed(entry: OutboxEntry, recipients: readonly Recipient[] = recipientsOf(entry, this.index)): AddressedEntry {
    const byQueue = new Map<string, Recipient[]>();
    for (const r of recipients) {
      const same = byQueue.get(r.queue);
      if (same) same.push(r);
      else byQueue.set(r.queue, [r]);
    }
    return { entry, byQueue, recipients: recipients.length };
  }

  /** Entry `sequence` with its recipients, if the store still holds it: read once for every queue paging it in. */
  private addressedEntry(sequence: number): AddressedEntry | undefined {
    let found = this.addressedEntries.get(sequence);
    if (found === undefined) {
      const entry = readOutboxEntry(this.store, sequence);
      found = entry ? this.addressed(entry) : null;
      this.addressedEntries.set(sequence, found);
    }
    return found ?? undefined;
  }

  private parkedItem(parked: ParkedNotification): Item {
    return {
      iri: parked.iri,
      sequence: parked.sequence,
      queuedAt: parked.queuedAt,
      recipient: { queue: parked.queue, subscription: parked.subscription, callback: parked.callback },
      parked,
      retryFrom: Date.now(),
      state: 'waiting',
    };
  }

  /**
   * A replayed dead letter goes back in its queue, before the queue's entries (it is older than
   * they are), in `parkedBefore` order among the others. At most `queueWindow` of them are held
   * in memory; the rest stay in the store only and are read as the window drains.
   */
  private enqueueParked(parked: ParkedNotification): void {
    const q = this.queueOf({ queue: parked.queue, subscription: parked.subscription, callback: parked.callback });
    if (q.parkedBacklog > 0 && !parkedBefore(parked, q.parkedCursor!)) {
      q.parkedBacklog += 1;
      return;
    }
    let i = 0;
    while (i < q.window.length && q.window[i].parked && parkedBefore(q.window[i], parked)) i += 1;
    q.window.splice(i, 0, this.parkedItem(parked));
    q.unsettled += 1;
    if (!q.parkedCursor || parkedBefore(q.parkedCursor, parked)) q.parkedCursor = parked;
    // One too many in memory: the last (unless it is being sent) goes back to the store only.
    const held = q.window.findIndex((item) => !item.parked);
    const last = (held === -1 ? q.window.length : held) - 1;
    if (last + 1 > this.options.queueWindow && q.window[last].state === 'waiting') {
      q.window.splice(last, 1);
      q.unsettled -= 1;
      q.parkedBacklog += 1;
      q.parkedCursor = q.window[last - 1].parked!;
    }
    this.kick(q);
  }

  /** Fills the window with the queue's next replayed dead letters from the store, after those it holds. */
  private pageInParked(q: Queue): void {
    if (this.stopped) return;
    const held = q.window.findIndex((item) => !item.parked);
    const end = held === -1 ? q.window.length : held;
    const limit = this.options.queueWindow - end;
    if (limit <= 0) return;
    const page = readParkedNotifications(this.store, { dead: false, queue: q.key, after: q.parkedCursor, limit }).map((p) => p.notification);
    q.window.splice(end, 0, ...page.map((parked) => this.parkedItem(parked)));
    q.unsettled += page.length;
    if (page.length > 0) q.parkedCursor = page[page.length - 1];
    q.parkedBacklog = page.length < limit ? 0 : Math.max(1, q.parkedBacklog - page.length);
    this.kick(q);
  }

  /**
   * Fills the window from the store with the queue's next notifications, entry after entry,
   * until the window is full or the whole backlog is in it. Runs in the tick of a commit or of a
   * delivery, never across an await, so it sees the store as the stream has published it.
   */
  private pageIn(q: Queue): void {
    if (this.stopped) return;
    let scanned = 0;
    while (q.backlog > 0 && q.unsettled < this.options.queueWindow && q.cursor < this.lastSequence && scanned++ < PAGE_IN_SCAN) {
      const addressed = this.addressedEntry(q.cursor + 1);
      q.cursor += 1;
      const mine = addressed?.byQueue.get(q.key);
      if (!addressed || !mine) continue;
      q.window.push(...this.itemsOf(addressed.entry, mine));
      q.unsettled += mine.length;
      q.backlog = Math.max(0, q.backlog - mine.length);
    }
    // Subscriptions that ended since leave fewer than were counted.
    if (q.cursor >= this.lastSequence) q.backlog = 0;
    else if (q.backlog > 0 && q.unsettled === 0) setImmediate(() => this.pageIn(q));
    this.kick(q);
  }

  /** The next notification `q` may send now, if any: its first unsettled one while retrying, else its first waiting one within the per-queue limit. */
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
    q.ready = true;
    this.ready.push(q);
    this.scheduleSends();
  }

  /**
   * Sends start in a later tick than the commit that queued them (a write's answer never waits
   * for them), at most `maxInFlight` at once, ready queues taking turns in order. While API
   * requests are being answered (`serving`), at most `inFlightWhileServing` at once and
   * `sendsPerSecondWhileServing`: the answers come first (sending and settling share their
   * thread), delivery still goes on at that pace, and at full speed in the pauses.
   */
  private scheduleSends(): void {
    if (this.sendsScheduled) return;
    this.sendsScheduled = true;
    setImmediate(() => {
      this.sendsScheduled = false;
      const serving = this.serving();
      let limit = this.options.maxInFlight;
      if (serving) {
        const now = performance.now();
        const burst = Math.min(this.options.inFlightWhileServing, this.options.maxInFlight);
        this.servingTokens = Math.min(burst, this.servingTokens + ((now - this.tokensAt) * this.options.sendsPerSecondWhileServing) / 1000);
        this.tokensAt = now;
        limit = Math.min(burst, this.inFlight + Math.floor(this.servingTokens));
      }
      while (this.inFlight < limit && this.ready.length > 0) {
        const q = this.ready.shift()!;
        q.ready = false;
        const item = this.nextOf(q);
        if (!item) {
          // Its state changed since it became ready (a failure set a retry time): waits for that.
          this.kick(q);
          continue;
        }
        if (serving) this.servingTokens -= 1;
        this.send(q, item);
        // Its next notification may go too, after the other ready queues had their turn.
        this.kick(q);
      }
      // Held back while serving: look again once a send may start (or the requests paused).
      if (serving && this.ready.length > 0 && this.resumeTimer === undefined) {
        const wait = Math.max(PAUSE_POLL_MS, ((1 - this.servingTokens) * 1000) / this.options.sendsPerSecondWhileServing);
        this.resumeTimer = setTimeout(() => {
          this.resumeTimer = undefined;
          this.scheduleSends();
        }, wait);
      }
    });
  }

  private send(q: Queue, item: Item): void {
    const attempt = new CallCancel();
    item.state = 'sending';
    item.attempt = attempt;
    q.sending += 1;
    this.inFlight += 1;
    void this.attempt(item, attempt)
      .catch((err: Error): Attempt => ({ outcome: 'failed', reason: `delivery failed: ${err.message}` }))
      .then((result) => {
        q.sending -= 1;
        this.inFlight -= 1;
        // What came of an attempt a failure before it discarded does not count: the notification goes again.
        if (item.attempt === attempt) {
          item.attempt = undefined;
          this.record(q, item, result);
        }
        this.kick(q);
        this.scheduleSends();
      });
  }

  /** Sends one notification (or finds it is to be dropped); what came of it. `cancel` ends the call. */
  private async attempt(item: Item, cancel: CallCancel): Promise<Attempt> {
    const { recipient } = item;
    const s = this.index.forRequest(recipient.subscription);
    const own = isOwnStatus(item);
    if (!own) {
      if (!s || !this.index.isActive(s)) return { outcome: 'dropped' };
      const object = objectOf(item);
      if (object !== undefined && !this.index.mayRead(s, object)) return { outcome: 'dropped' };
    }
    const body = this.body(item, own ? undefined : s);
    const token = await this.tokens?.token();
    let res;
    try {
      res = await this.client.requestInOrder(recipient.callback, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/ld+json',
          Accept: 'application/ld+json',
          'Idempotency-Key': item.iri,
          'webhook-id': item.iri,
          'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
          ...(token ? { Authorization: `Bearer ${token}` } : {}),
        },
        body,
      }, recipient.queue, this.options.queueInFlight, cancel);
    } catch (err) {
      if (err instanceof OutboundError && err.code === 'outbound_address_refused') return { outcome: 'dead', reason: err.message };
      return { outcome: 'failed', reason: (err as Error).message };
    }
    if (res.status >= 200 && res.status < 300) return { outcome: 'delivered' };
    if (res.status === 410) {
      if (!s) return { outcome: 'dead', reason: `${recipient.callback} answered 410 Gone` };
      // Ended before the queue goes on: its next notifications are dropped, not sent to be refused again.
      await this.subscriptions.end(s, `${recipient.callback} answered 410 Gone`).catch((err: Error) => this.log(`subscription ${s.request.iri} could not be ended: ${err.message}`));
      return { outcome: 'dead', reason: `${recipient.callback} answered 410 Gone: the subscription ends` };
    }
    return { outcome: 'failed', reason: `${recipient.callback} answered ${res.status}`, retryAfter: retryAfterMs(res.headers['retry-after']) };
  }

  /**
   * The notification as sent (see `notificationTriples`). Every recipient of an entry gets the same
   * body but for its @id: it is serialised once per entry (with and without the object's body)
   * and the @id put in for each.
   */
  private body(item: Item, s: Subscription | undefined): string {
    if (item.parked) return writeJsonLd({ iri: item.iri, triples: this.notificationTriples(item, s) });
    const key = s?.sendLogisticsObjectBody ? `${item.sequence} body` : `${item.sequence}`;
    const shared = this.bodies.get(key);
    if (shared) return `${shared.before}${JSON.stringify(item.iri)}${shared.after}`;
    const body = writeJsonLd({ iri: item.iri, triples: this.notificationTriples(item, s) });
    const id = JSON.stringify(item.iri);
    const at = body.indexOf(id);
    // The @id once only (as the root's): the rest of the body is the same for every recipient.
    if (at >= 0 && body.indexOf(id, at + id.length) < 0) this.bodies.set(key, { before: body.slice(0, at), after: body.slice(at + id.length) });
    return body;
  }

  /** The notification as sent: as queued, plus the object's revision when `s` (whose subscriber may read it) asks for the body. */
  private notificationTriples(item: Item, s: Subscription | undefined): Quad[] {
    const triples = item.parked ? payloadTriples(item.parked.graph, this.store.graphTriples(item.parked.graph)) : notificationQuads(item.iri, item.content!);
    const [object, number] = [objectOf(item), revisionOf(item)];
    if (!s?.sendLogisticsObjectBody || object === undefined || number === undefined) return triples;
    const entry = this.index.revisions.get(object);
    const revision = entry && this.index.revisions.revision(entry, number);
    return revision ? [...triples, ...this.readRevision(revision.graph)] : triples;
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
        const delay = result.retryAfter !== undefined ? Math.min(result.retryAfter, windowEnd - now) : backoffMs(q.attempts, this.options);
        q.nextAttemptAt = Math.max(q.nextAttemptAt, now + delay);
        return;
      }
      return this.record(q, item, { outcome: 'dead', reason: `not delivered within the retry window: ${result.reason}` });
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
    this.advance(q);
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
      this.deadToWrite.push({ parked: item.parked, triples: [], dead, isNew: false });
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
    this.deadToWrite.push({ parked, triples: notificationQuads(item.iri, content), dead, isNew: true });
  }

  /**
   * Settled notifications leave the front of the window; the queue's position moves past the
   * entries they came from (stored by the next settle commit); the window is filled again from
   * the store; an empty queue is forgotten (its position is kept).
   */
  private advance(q: Queue): void {
    let settled = 0;
    while (settled < q.window.length && q.window[settled].state === 'settled') settled += 1;
    for (const item of q.window.splice(0, settled)) if (item.parked && !item.deadLettered) this.parkedToRemove.push(item.parked);
    const next = q.window.find((i) => !i.parked);
    const through = next ? next.sequence - 1 : q.cursor;
    if (through > (this.positions.get(q.key) ?? 0)) {
      this.positions.set(q.key, through);
      this.moved.add(q.key);
    }
    if (q.parkedBacklog > 0 && q.window.filter((i) => i.parked).length <= this.options.queueWindow / 4) this.pageInParked(q);
    if (q.unsettled <= this.options.queueWindow / 4 && q.backlog > 0) this.pageIn(q);
    if (q.window.length === 0 && q.backlog === 0 && q.parkedBacklog === 0 && q.sending === 0) {
      clearTimeout(q.timer);
      this.queues.delete(q.key);
    }
    this.scheduleSettle();
  }

  /** The highest entry number no queue still needs: the first entry of a notification not settled yet, less one. */
  private lowWater(): number {
    let low = this.arrived.length > 0 ? this.arrived[0].entry.sequence - 1 : this.lastSequence;
    for (const q of this.queues.values()) {
      const first = q.window.find((i) => !i.parked && i.state !== 'settled');
      if (first) low = Math.min(low, first.sequence - 1);
      else if (q.backlog > 0) low = Math.min(low, q.cursor);
    }
    return low;
  }

  /**
   * One commit, in a later tick, for everything settled meanwhile: queue positions, dead letters,
   * replayed dead letters delivered, entries every queue is past. One at a time (each moves
   * positions from what the last one stored). Should it fail, what it held is written by the next
   * one, after a backoff (a store that refuses writes must not make it a tight loop); meanwhile
   * nothing is sent twice, and after a crash a notification not recorded as settled is sent again
   * (duplicates at most, which receivers drop).
   */
  private scheduleSettle(delay = 0): void {
    if (this.settleScheduled) return;
    this.settleScheduled = true;
    const run = () => {
      this.settleScheduled = false;
      if (this.settlement || this.stopped) return;
      this.settle(POSITION_SLACK);
    };
    const wait = delay > 0 ? delay : this.lastSettleAt + (this.serving() ? SETTLE_INTERVAL_WHILE_SERVING_MS : SETTLE_INTERVAL_MS) - Date.now();
    if (wait > 0) setTimeout(run, wait);
    else setImmediate(run);
  }

  /** Commits what was settled (positions more than `slack` entries past the entries removed); resolves when done, whether it succeeded or not. */
  private settle(slack: number): Promise<void> {
    // Looking costs a pass over the queues that moved: no more often than a commit, even when there is nothing to write.
    this.lastSettleAt = Date.now();
    const tx = this.settleTransaction(slack);
    if (!tx) return Promise.resolve();
    const [parked, dead] = [this.parkedToRemove, this.deadToWrite];
    this.parkedToRemove = [];
    this.deadToWrite = [];
    this.settlement = this.store.commit(tx).then(
      () => {
        this.settlement = undefined;
        this.settleFailures = 0;
        const removable = this.lowWater() > (this.compactedThrough ?? this.lastSequence);
        if (this.parkedToRemove.length > 0 || this.deadToWrite.length > 0 || removable || this.positionsToWrite(this.compactedThrough ?? this.lastSequence, POSITION_SLACK).length > 0) this.scheduleSettle();
      },
      (err: Error) => {
        this.settlement = undefined;
        this.settleFailures += 1;
        this.parkedToRemove.unshift(...parked);
        this.deadToWrite.unshift(...dead);
        this.log(`the outbox could not record what was delivered; retrying: ${err.message}`);
        this.scheduleSettle(backoffMs(this.settleFailures, this.options) + 1);
      },
    );
    return this.settlement;
  }

  /** The queues that moved whose position is to be written, once the entries up to `removedThrough` are removed (see POSITION_SLACK). */
  private positionsToWrite(removedThrough: number, slack: number): string[] {
    // A queue whose dead letter this commit writes gets its position in it too: after a crash it must not send that notification again.
    const deadLettering = new Set(this.deadToWrite.map((d) => d.parked.queue));
    return [...this.moved].filter((queue) => this.positions.get(queue)! > removedThrough + slack || deadLettering.has(queue));
  }

  private settleTransaction(slack: number): WriteTransaction | undefined {
    const tx = this.store.begin();
    const from = this.compactedThrough ?? this.lastSequence;
    const to = Math.min(this.lowWater(), from + COMPACT_BATCH);
    for (const queue of this.positionsToWrite(Math.max(from, to), slack)) {
      const through = this.positions.get(queue)!;
      const moved = movedQueuePosition(queue, this.storedPositions.get(queue) ?? 0, through);
      tx.delete.push(...moved.delete);
      tx.insert.push(...moved.insert);
      tx.events.push({ kind: 'outbox-advanced', queue, through });
    }
    for (const parked of this.parkedToRemove) {
      tx.delete.push(...this.storedGraph(parked.graph));
      tx.events.push({ kind: 'notification-settled', notification: parked });
    }
    for (const { parked, triples, dead, isNew } of this.deadToWrite) {
      if (isNew) tx.insert.push(...parkedNotificationQuads(parked, triples));
      tx.insert.push(...deadLetterQuads(parked, dead));
      tx.events.push({ kind: 'notification-dead-lettered', notification: parked, dead });
    }
    if (to > from) {
      for (let sequence = from + 1; sequence <= to; sequence++) {
        const known = this.addressedEntries.get(sequence);
        if (known) tx.delete.push(...outboxEntryQuads(known.entry));
        else if (known === undefined) tx.delete.push(...this.storedGraph(outboxEntryGraph(sequence)));
      }
      if (from > 0) tx.delete.push(compactedThroughQuad(from));
      tx.insert.push(compactedThroughQuad(to));
      tx.events.push({ kind: 'outbox-compacted', through: to });
    }
    return tx.events.length > 0 ? tx : undefined;
  }

  /** The quads of a graph as stored (graphTriples gives its triples). */
  private storedGraph(graph: string): Quad[] {
    const g = namedNode(graph);
    return this.store.graphTriples(graph).map((t) => quad(t.subject, t.predicate, t.object, g));
  }

  depth(): OutboxDepth {
    let [pending, queues] = [this.arrivedRecipients, 0];
    for (const q of this.queues.values()) {
      pending += q.unsettled + q.backlog + q.parkedBacklog;
      if (q.unsettled + q.backlog + q.parkedBacklog > 0) queues += 1;
    }
    return { pending, queues, deadLetters: this.deadLetters };
  }

  queueViews(): QueueView[] {
    return [...this.queues.values()]
      .filter((q) => q.unsettled + q.backlog + q.parkedBacklog > 0)
      .map((q) => ({
        queue: q.key,
        callback: q.callback,
        pending: q.unsettled + q.backlog + q.parkedBacklog,
        inMemory: q.unsettled,
        attempts: q.attempts,
        ...(q.nextAttemptAt > Date.now() ? { nextAttemptAt: new Date(q.nextAttemptAt).toISOString() } : {}),
        ...(q.lastError ? { lastError: q.lastError } : {}),
      }));
  }

  /** The dead letters, oldest first, as the store holds them. */
  deadLetterViews(): DeadLetterView[] {
    return readParkedNotifications(this.store, { dead: true }).map(({ notification: n, dead }) => ({
      notification: n.iri,
      queue: n.queue,
      subscription: n.subscription,
      callback: n.callback,
      eventType: n.eventType,
      ...(n.object === undefined ? {} : { object: n.object }),
      queuedAt: n.queuedAt.toISOString(),
      deadLetteredAt: dead!.at.toISOString(),
      reason: dead!.reason,
    }));
  }

  /** Puts dead letters (all, or those named) back in their queues, in one commit; how many. */
  async replay(notifications?: readonly string[]): Promise<number> {
    const chosen = readParkedNotifications(this.store, { dead: true }).filter((d) => notifications === undefined || notifications.includes(d.notification.iri));
    if (chosen.length === 0) return 0;
    const tx = this.store.begin({ delete: chosen.flatMap((d) => deadLetterQuads(d.notification, d.dead!)) });
    for (const d of chosen) tx.events.push({ kind: 'notification-replayed', notification: d.notification });
    await this.store.commit(tx);
    return chosen.length;
  }
}
