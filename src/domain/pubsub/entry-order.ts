import { BoundedCache } from '../../bounded-cache.js';
import type { OutboxEntry, Recipient } from '../../store/schema/outbox.js';

/** An outbox entry as a commit published it, with the recipients found when it was written (if known). */
export interface QueuedEntry {
  entry: OutboxEntry;
  recipients?: readonly Recipient[];
}

export interface EntryOrderOptions {
  /** Whether a commit of this process that writes entry `sequence` is still under way. */
  inFlight: (sequence: number) => boolean;
  /**
   * How long a missing number that no commit of this process writes is waited for: another process
   * may be writing it (several processes on one engine); 0 when this process numbers alone (such a
   * number belongs to a commit that failed).
   */
  othersWaitMs: number;
  /**
   * How long a number given up on after `othersWaitMs` is still awaited (`oldestAwaited`): the
   * commit of a process killed with it under way comes once the others take that process for dead.
   */
  awaitedMs?: number;
  log: (message: string) => void;
}

/** A held-back entry is looked at again this often while it waits for a number before it. */
const GAP_RECHECK_MS = 20;
/** Numbers given up on that are still taken should they show up; the oldest are forgotten past it. */
const GIVEN_UP_KEPT = 10_000;
/** Entries handed over that are remembered by number (to tell one published again from another under its number). */
const HANDED_KEPT = 100_000;

/**
 * Hands outbox entries to delivery in number order, since commits may be published out of order and a queue
 * never goes back to a number it passed: an entry waits for the numbers before it until they come, are known not
 * to, or `othersWaitMs` passed (docs/delivery.md, "Delivery order", for late entries and the start).
 */
export class EntryOrder {
  /** Every number up to this one was handed over or given up on. */
  private through = 0;
  private isLive = false;
  private readonly held = new Map<number, QueuedEntry>();
  /** Numbers given up on: handed over late should they show up. */
  private readonly givenUp = new Set<number>();
  /** Of those, the ones given up on for want of time, and when (in number order, as given up). */
  private readonly awaited = new Map<number, number>();
  /** Numbers after `through` that will not be written. */
  private readonly unused = new Set<number>();
  /** Numbers seen before `live`. */
  private readonly seenBeforeLive = new Set<number>();
  /** The @id of the entry handed over under each recent number. */
  private readonly handed = new BoundedCache<number, string>(HANDED_KEPT);
  /** Since when the number after `through` is waited for. */
  private gapSince: number | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly options: EntryOrderOptions,
    /** `late`: handed over after entries numbered after it. */
    private readonly handOver: (queued: QueuedEntry, late: boolean) => void,
  ) {}

  /**
   * From now on, numbers after the highest seen, or after `numbered` (the highest number known to be
   * taken), are handed over in order; the last GIVEN_UP_KEPT numbers up to there not seen are given
   * up on, and those after `removedThrough` (the entries removed from the store) awaited too (a
   * commit under way while the store was read writes one of them).
   */
  live(numbered: number, removedThrough = numbered): void {
    this.isLive = true;
    this.through = Math.max(this.through, numbered);
    const now = Date.now();
    for (let n = Math.max(1, this.through - GIVEN_UP_KEPT + 1); n <= this.through; n++) {
      if (this.seenBeforeLive.has(n)) continue;
      this.giveUp(n);
      if (this.options.awaitedMs && n > removedThrough) this.awaited.set(n, now);
    }
    this.seenBeforeLive.clear();
  }

  add(queued: QueuedEntry): void {
    const { sequence } = queued.entry;
    if (!this.isLive) {
      const before = this.handed.get(sequence);
      if (before !== undefined && before !== queued.entry.iri) {
        this.another(queued);
        return;
      }
      this.through = Math.max(this.through, sequence);
      this.seenBeforeLive.add(sequence);
      this.hand(queued, false);
      return;
    }
    if (sequence <= this.through) {
      if (this.givenUp.delete(sequence)) {
        this.awaited.delete(sequence);
        this.options.log(
          `outbox entry ${sequence} was published after later ones were handed to delivery: delivered out of order`,
        );
        this.hand(queued, true);
        return;
      }
      // Published again (a takeover reads what the feed also brings): once is enough. Another entry
      // under a number handed over already (two processes numbered alike) is delivered all the same.
      if (this.handed.get(sequence) === undefined || this.handed.get(sequence) === queued.entry.iri) return;
      this.another(queued);
      return;
    }
    const waiting = this.held.get(sequence);
    if (waiting && waiting.entry.iri !== queued.entry.iri) {
      this.another(queued);
      return;
    }
    this.held.set(sequence, queued);
    this.release();
  }

  private another(queued: QueuedEntry): void {
    this.options.log(
      `outbox entry ${queued.entry.sequence} (${queued.entry.iri}) shares its number with another entry: ` +
        'delivered out of order',
    );
    this.hand(queued, true);
  }

  private hand(queued: QueuedEntry, late: boolean): void {
    this.handed.set(queued.entry.sequence, queued.entry.iri);
    this.handOver(queued, late);
  }

  /** Numbers another process said it will not write: not waited for (yet another process may write them). */
  released(numbers: readonly number[]): void {
    for (const n of numbers) if (n > this.through) this.unused.add(n);
    if (this.held.size > 0) this.release();
  }

  /**
   * The lowest number given up on for want of time within the last `awaitedMs`: should it come, it
   * is delivered late, so queue positions are recorded, and entries removed, only below it (a
   * takeover then sends it, should this process die before recording its queues' positions back).
   */
  oldestAwaited(now = Date.now()): number | undefined {
    for (const [sequence, since] of this.awaited) {
      if (now - since < (this.options.awaitedMs ?? 0)) return sequence;
      this.awaited.delete(sequence);
    }
    return undefined;
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private giveUp(sequence: number): void {
    this.givenUp.add(sequence);
    if (this.givenUp.size > GIVEN_UP_KEPT) this.givenUp.delete(this.givenUp.values().next().value!);
  }

  /** Hands over what follows `through` without a gap, and gives up on the numbers that will not come. */
  private release(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    while (this.held.size > 0) {
      const next = this.held.get(this.through + 1);
      if (next) {
        this.held.delete(this.through + 1);
        this.through += 1;
        this.gapSince = undefined;
        this.hand(next, false);
        continue;
      }
      if (this.unused.delete(this.through + 1)) {
        // Should it come after all (a commit numbered alike by two processes, the loser told it as its own), it goes
        // late; awaited meanwhile, so no position is recorded past it before it could come.
        this.through += 1;
        this.giveUp(this.through);
        if (this.options.awaitedMs) this.awaited.set(this.through, Date.now());
        continue;
      }
      if (this.options.inFlight(this.through + 1)) break;
      const now = Date.now();
      this.gapSince ??= now;
      if (now - this.gapSince < this.options.othersWaitMs) break;
      // The numbers after it were missing as long: given up on without waiting again.
      this.through += 1;
      this.giveUp(this.through);
      if (this.options.awaitedMs) this.awaited.set(this.through, now);
    }
    if (this.held.size > 0) {
      this.timer = setTimeout(() => this.release(), GAP_RECHECK_MS);
      this.timer.unref();
    }
  }
}
