import { BoundedCache } from '../../bounded-cache.js';
import type { CallCancel } from '../../outbound/http-client.js';
import type { StoreReader } from '../../store/graph-store.js';
import {
  parkedBefore,
  readOutboxEntry,
  readParkedNotifications,
  type NotificationContent,
  type OutboxEntry,
  type ParkedNotification,
  type ParkedPosition,
  type Recipient,
} from '../../store/schema/outbox.js';
import { queueGroup, type DeliveryGroup } from './delivery-groups.js';
import { notificationIri, recipientsOf } from './outbox.js';
import type { SettleCommits } from './delivery-settle.js';
import type { SubscriptionIndex } from './subscriptions.js';

/** One notification to one recipient, in its queue's window. */
export interface Item {
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

export const objectOf = (item: Item) => item.parked?.object ?? item.content?.object;
export const revisionOf = (item: Item) => item.parked?.revision ?? item.content?.revision;

/**
 * One FIFO queue (subscriber and topic): a window of its first notifications in order, and its
 * retry state. The rest of its backlog stays in the store only (entries after `cursor`) and is
 * read as the window drains, so memory does not grow with a subscriber's downtime.
 */
export interface Queue {
  key: string;
  callback: string;
  /**
   * Replayed dead letters first, then notifications of entries up to `cursor`, in entry order; settled ones leave from
   * the front.
   */
  window: Item[];
  /**
   * Entries up to this number were looked at for this queue: their notifications to it are in the window or settled.
   */
  cursor: number;
  /** Notifications of entries after `cursor`: in the store only (a count, for the queue's listing). */
  backlog: number;
  /**
   * The last entry counted into the backlog: entries up to it are read from the store. The number, not the count,
   * says when the backlog is read whole: an entry published late and read with the backlog before it joined its
   * queue was never counted in it.
   */
  backlogThrough: number;
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
  /** A read from the store fills the window: one at a time (see `refill`). */
  paging?: boolean;
  /**
   * Resolves once the last notification sent is handed to the HTTP client (which keeps a queue's calls in that order).
   */
  handedOver?: Promise<void>;
  timer?: NodeJS.Timeout;
  lastError?: string;
}

/** Notifications of the queue still to deliver: in its window or in the store only. */
export const pendingOf = (q: Queue) => q.unsettled + q.backlog + q.parkedBacklog;

/** Entries of the queue are still to be read from the store. */
const hasBacklog = (q: Queue) => q.cursor < q.backlogThrough;

/**
 * The lowest entry number of the window's notifications not settled yet (Infinity: none). Not the first one's: a late
 * entry goes in behind notifications being sent, so the window is not always in number order.
 */
const lowestUnsettled = (q: Queue) =>
  q.window.reduce((low, i) => (i.parked || i.state === 'settled' ? low : Math.min(low, i.sequence)), Infinity);

/** At most this many entries are looked at in one go when paging a queue's backlog in (the rest in a later tick). */
const PAGE_IN_SCAN = 2000;

/** After a failed read of a queue's backlog, the next try. */
const REFILL_RETRY_MS = 1000;
/** Recipients (plus one per entry) of the entries kept read for queues paging their backlog in. */
const ADDRESSED_ENTRIES_KEPT = 100_000;

/** Queues whose group is known, per delivery of a group. */
const GROUPS_KEPT = 100_000;

/**
 * Recipients by queue, per list of recipients: the entries of writes to one object share the list the subscription
 * index found (until a subscription changes), and so their grouping; shared by the deliveries of every group.
 */
const grouped = new WeakMap<readonly Recipient[], ReadonlyMap<string, readonly Recipient[]>>();
/** With groups, the recipients of each published entry, found by the first group's delivery for all of them. */
const foundRecipients = new WeakMap<OutboxEntry, readonly Recipient[]>();

/** An outbox entry with its recipients by queue, as queues page it in. */
interface AddressedEntry {
  entry: OutboxEntry;
  byQueue: ReadonlyMap<string, readonly Recipient[]>;
  recipients: number;
}

/**
 * The queues' windows: notifications join them in entry order; settled ones leave from the front
 * and move the queue's position; the window is filled again from the store (entries, and replayed
 * dead letters before them) as it drains. Memory holds `queueWindow` notifications per queue.
 */
export class QueueWindows {
  private readonly queues = new Map<string, Queue>();
  /**
   * Entries read for queues paging in their backlog (null: no longer in the store), shared by
   * them: lagging queues (a subscriber server down with many subscriptions) read, parse and
   * address each entry once, not once per queue.
   */
  private readonly addressedEntries = new BoundedCache<number, AddressedEntry | null>(
    ADDRESSED_ENTRIES_KEPT,
    (a) => 1 + (a?.recipients ?? 0),
  );
  /** With a group: whether each queue seen is in it. */
  private readonly inGroup = new BoundedCache<string, boolean>(GROUPS_KEPT);

  constructor(
    private readonly store: StoreReader,
    private readonly index: SubscriptionIndex,
    private readonly settle: SettleCommits,
    /** Notifications of one queue kept in memory. */
    private readonly queueWindow: number,
    /** `q` has notifications that may be sent. */
    private readonly kick: (q: Queue) => void,
    /** The group of queues delivered here (several processes delivering): the others' are not. */
    private readonly group?: DeliveryGroup,
  ) {}

  private isMine(queue: string): boolean {
    if (!this.group) return true;
    let mine = this.inGroup.get(queue);
    if (mine === undefined) {
      mine = queueGroup(queue, this.group.count) === this.group.index;
      this.inGroup.set(queue, mine);
    }
    return mine;
  }

  all(): IterableIterator<Queue> {
    return this.queues.values();
  }

  /** Entry `sequence` if read already (null: no longer in the store). */
  knownEntry(sequence: number): OutboxEntry | null | undefined {
    const known = this.addressedEntries.get(sequence);
    return known === undefined ? undefined : (known?.entry ?? null);
  }

  /** The entries after `from` up to `through` are removed from the store. */
  forgetEntries(from: number, through: number): void {
    if (this.addressedEntries.size > 0)
      for (let sequence = from + 1; sequence <= through; sequence++) this.addressedEntries.delete(sequence);
  }

  /**
   * The highest entry number no queue still needs, at most `low`: the first entry of a notification not settled yet,
   * less one.
   */
  lowWater(low: number): number {
    for (const q of this.queues.values()) {
      const first = lowestUnsettled(q);
      if (first !== Infinity) low = Math.min(low, first - 1);
      else if (hasBacklog(q)) low = Math.min(low, q.cursor);
    }
    return low;
  }

  private queueOf(recipient: Recipient): Queue {
    let q = this.queues.get(recipient.queue);
    if (!q) {
      const cursor = this.settle.position(recipient.queue);
      q = {
        key: recipient.queue,
        callback: recipient.callback,
        window: [],
        cursor,
        backlog: 0,
        backlogThrough: cursor,
        parkedBacklog: 0,
        unsettled: 0,
        sending: 0,
        attempts: 0,
        nextAttemptAt: 0,
        retrying: false,
        ready: false,
      };
      this.queues.set(q.key, q);
    }
    return q;
  }

  private itemsOf(entry: OutboxEntry, recipients: readonly Recipient[]): Item[] {
    return recipients.map((recipient) => ({
      iri: notificationIri(entry, recipient),
      sequence: entry.sequence,
      queuedAt: entry.queuedAt,
      recipient,
      content: entry.content,
      state: 'waiting',
    }));
  }

  /**
   * An entry's notifications join their queues' windows, or stay in the store only for a queue whose window is full
   * or has a backlog; queues already past the entry skip it, and a `late` one (EntryOrder) joins the windows of
   * queues past it in its place by number (docs/delivery.md, "Delivery order"). Answers why no queue took it.
   */
  enqueue(entry: OutboxEntry, recipients?: readonly Recipient[], late = false): string | undefined {
    const addressed = this.addressed(entry, recipients);
    let held = false;
    let taken = false;
    let passed = false;
    /** A queue of another group not past it: delivered by another process, which needs the entry kept. */
    let othersBehind = false;
    for (const [key, recipients] of addressed.byQueue) {
      const [position, cursor] = [this.settle.position(key), this.queues.get(key)?.cursor ?? 0];
      if (!this.isMine(key)) {
        othersBehind ||= entry.sequence > position;
        continue;
      }
      // Put in the window of a queue whose backlog covers its number, it would be read from the
      // store again with that backlog, and sent twice.
      if (late && entry.sequence <= Math.max(position, cursor)) {
        this.insertLate(entry, recipients);
        held = true;
        continue;
      }
      if (entry.sequence <= position || entry.sequence <= cursor) {
        passed = true;
        continue;
      }
      taken = true;
      const q = this.queueOf(recipients[0]);
      if (hasBacklog(q) || q.unsettled >= this.queueWindow) {
        q.backlog += recipients.length;
        q.backlogThrough = Math.max(q.backlogThrough, entry.sequence);
      } else {
        q.window.push(...this.itemsOf(entry, recipients));
        q.unsettled += recipients.length;
        q.cursor = entry.sequence;
        held = true;
      }
      this.kick(q);
    }
    // Kept for the queues that page it in later and for its removal, while a window holds it:
    // an entry that went to backlogs only stays in the store (the first queue to page it in reads
    // it for the others), so a dead subscriber's backlog does not fill the heap.
    if (held) this.addressedEntries.set(entry.sequence, addressed);
    // Read from the store below the entries removed, and no queue's: left behind by a removal (a
    // late one, published after the entries after it were removed, stays until every queue is past it).
    // With groups, group 0 alone removes it (it removes the entries every group is past).
    else if (
      !late &&
      !taken &&
      !othersBehind &&
      (this.group?.index ?? 0) === 0 &&
      entry.sequence <= (this.settle.compactedThrough ?? 0)
    )
      this.settle.removeEntry(entry.sequence);
    return held || taken || othersBehind ? undefined : passed ? 'its queues are past it' : 'no recipient';
  }

  /**
   * A late entry's notifications to one queue, in the window before the notifications of later entries (the window may
   * hold one too many meanwhile).
   */
  private insertLate(entry: OutboxEntry, recipients: readonly Recipient[]): void {
    const q = this.queueOf(recipients[0]);
    let i = q.window.length;
    while (
      i > 0 &&
      !q.window[i - 1].parked &&
      q.window[i - 1].state === 'waiting' &&
      q.window[i - 1].sequence > entry.sequence
    )
      i -= 1;
    q.window.splice(i, 0, ...this.itemsOf(entry, recipients));
    q.unsettled += recipients.length;
    this.settle.rewind(q.key, entry.sequence - 1);
    this.kick(q);
  }

  /** An entry with its recipients by queue (`recipientsOf` unless known). */
  private addressed(entry: OutboxEntry, recipients = this.recipientsOf(entry)): AddressedEntry {
    let byQueue = grouped.get(recipients);
    if (!byQueue) {
      const groups = new Map<string, Recipient[]>();
      for (const r of recipients) {
        const same = groups.get(r.queue);
        if (same) same.push(r);
        else groups.set(r.queue, [r]);
      }
      byQueue = groups;
      grouped.set(recipients, byQueue);
    }
    return { entry, byQueue, recipients: recipients.length };
  }

  private recipientsOf(entry: OutboxEntry): readonly Recipient[] {
    if (!this.group) return recipientsOf(entry, this.index);
    let found = foundRecipients.get(entry);
    if (!found) {
      found = recipientsOf(entry, this.index);
      foundRecipients.set(entry, found);
    }
    return found;
  }

  /** Entry `sequence` with its recipients, if the store still holds it: read once for every queue paging it in. */
  private async addressedEntry(sequence: number): Promise<AddressedEntry | undefined> {
    let found = this.addressedEntries.get(sequence);
    if (found === undefined) {
      const entry = await readOutboxEntry(this.store, sequence);
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
  enqueueParked(parked: ParkedNotification): void {
    if (!this.isMine(parked.queue)) return;
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
    if (last + 1 > this.queueWindow && q.window[last].state === 'waiting') {
      q.window.splice(last, 1);
      q.unsettled -= 1;
      q.parkedBacklog += 1;
      q.parkedCursor = q.window[last - 1].parked!;
    }
    this.kick(q);
  }

  /**
   * Settled notifications leave the front of the window; the queue's position moves past the
   * entries they came from (stored by the next settle commit); the window is filled again from
   * the store; an empty queue is forgotten (its position is kept).
   */
  advance(q: Queue): void {
    let settled = 0;
    while (settled < q.window.length && q.window[settled].state === 'settled') settled += 1;
    for (const item of q.window.splice(0, settled))
      if (item.parked && !item.deadLettered) this.settle.removeParked(item.parked);
    const next = lowestUnsettled(q);
    this.settle.moveTo(q.key, next === Infinity ? q.cursor : next - 1);
    this.refill(q);
    this.forgetIfEmpty(q);
    this.settle.schedule();
  }

  private forgetIfEmpty(q: Queue): void {
    if (q.window.length === 0 && !hasBacklog(q) && q.parkedBacklog === 0 && q.sending === 0 && !q.paging) {
      clearTimeout(q.timer);
      if (this.queues.get(q.key) === q) this.queues.delete(q.key);
    }
  }

  /**
   * Fills a window run low from the store: replayed dead letters first, then entries. One read at
   * a time per queue, so the cursors it moves are moved by nothing else meanwhile (arrivals during
   * the read only add to the backlog counts); the next read, if still needed, in a later tick.
   */
  private refill(q: Queue): void {
    if (q.paging || this.settle.stopped) return;
    const parked = q.parkedBacklog > 0 && q.window.filter((i) => i.parked).length <= this.queueWindow / 4;
    if (!parked && !(q.unsettled <= this.queueWindow / 4 && hasBacklog(q))) return;
    q.paging = true;
    (parked ? this.pageInParked(q) : this.pageIn(q)).then(
      () => {
        q.paging = false;
        this.kick(q);
        setImmediate(() => {
          this.refill(q);
          this.forgetIfEmpty(q);
        });
      },
      (err: Error) => {
        // The store did not answer (an engine down): the notifications wait there, read again later.
        q.paging = false;
        q.lastError = `reading the queue from the store: ${err.message}`;
        setTimeout(() => this.refill(q), REFILL_RETRY_MS).unref();
      },
    );
  }

  /** Fills the window with the queue's next replayed dead letters from the store, after those it holds. */
  private async pageInParked(q: Queue): Promise<void> {
    const heldBefore = q.window.findIndex((item) => !item.parked);
    const limit = this.queueWindow - (heldBefore === -1 ? q.window.length : heldBefore);
    if (limit <= 0) return;
    const read = (
      await readParkedNotifications(this.store, { dead: false, queue: q.key, after: q.parkedCursor, limit })
    ).map((p) => p.notification);
    if (this.settle.stopped) return;
    // Replays during the read may have put some of them in the window already, and moved the cursor.
    const cursor = q.parkedCursor;
    const page = read.filter((parked) => !cursor || parkedBefore(cursor, parked));
    for (const parked of page) {
      let i = 0;
      while (i < q.window.length && q.window[i].parked && parkedBefore(q.window[i], parked)) i += 1;
      q.window.splice(i, 0, this.parkedItem(parked));
    }
    q.unsettled += page.length;
    if (page.length > 0) q.parkedCursor = page[page.length - 1];
    q.parkedBacklog = read.length < limit ? 0 : Math.max(1, q.parkedBacklog - page.length);
  }

  /**
   * Fills the window from the store with the queue's next notifications, entry after entry,
   * until the window is full or the whole backlog is in it. Runs in the tick of a commit or of a
   * delivery, never across an await, so it sees the store as the stream has published it.
   */
  private async pageIn(q: Queue): Promise<void> {
    let scanned = 0;
    // The backlog's end is read afresh each time: entries arrive during the reads (they add to the backlog).
    while (hasBacklog(q) && q.unsettled < this.queueWindow && scanned++ < PAGE_IN_SCAN) {
      const addressed = await this.addressedEntry(q.cursor + 1);
      if (this.settle.stopped) return;
      q.cursor += 1;
      const mine = addressed?.byQueue.get(q.key);
      if (!addressed || !mine) continue;
      q.window.push(...this.itemsOf(addressed.entry, mine));
      q.unsettled += mine.length;
      q.backlog = Math.max(0, q.backlog - mine.length);
    }
    // Subscriptions that ended since leave fewer than were counted.
    if (!hasBacklog(q)) q.backlog = 0;
  }
}
