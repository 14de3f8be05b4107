import { BoundedCache } from '../../bounded-cache.js';
import type { SparqlReader } from '../readers.js';
import type { DomainEvent } from '../transaction.js';
import { parseEvents, readFeed, type FeedEntry } from './commit-feed.js';

/** Entries read per query. */
const BATCH = 500;
/** Commits remembered as published (an entry written twice is published once). */
const SEEN_COMMITS = 20_000;
/** How long a skipped position is asked for again; how many at most. */
const LATE_WINDOW_MS = 60_000;
const LATE_POSITIONS = 1_000;
/** Pause before another round while a gap holds back what follows it. */
const GAP_POLL_MS = 5;
/**
 * Feed reads for requests start this far apart at least: requests arriving within it share one
 * (each read costs the engine about as much as a GET's own work here).
 */
const SHARED_READ_INTERVAL_MS = 2;

export interface FeedFollowerOptions {
  pollMs: number;
  gapWaitMs: number;
  /** A commit this process published itself. */
  isOwn: (intent: string) => boolean;
  publish: (events: readonly DomainEvent[]) => void;
  log: (message: string) => void;
  /** Seconds from a commit of another process until it was published here. */
  observeLag?: (seconds: number) => void;
}

/**
 * A read that starts after it is asked for, shared by all who ask before it starts: while one runs,
 * the next waits for it to end, and reads start `minIntervalMs` apart at least, so that requests
 * arriving together share one.
 */
class SharedRead<T> {
  private running: Promise<T> | undefined;
  private waiting: Promise<T> | undefined;
  private lastStart = 0;

  constructor(
    private readonly read: () => Promise<T>,
    private readonly minIntervalMs: number,
  ) {}

  next(): Promise<T> {
    if (this.waiting !== undefined) return this.waiting;
    const running = this.running;
    if (!running && Date.now() - this.lastStart >= this.minIntervalMs) return this.launch();
    this.waiting = (async () => {
      await running?.catch(() => undefined);
      const pause = this.lastStart + this.minIntervalMs - Date.now();
      if (pause > 0) await new Promise((resolve) => setTimeout(resolve, pause));
      this.waiting = undefined;
      return this.launch();
    })();
    return this.waiting;
  }

  /** The running read, or the next one. */
  current(): Promise<T> {
    return this.running ?? this.next();
  }

  private launch(): Promise<T> {
    this.lastStart = Date.now();
    const run = this.read().finally(() => {
      if (this.running === run) this.running = undefined;
    });
    this.running = run;
    return run;
  }
}

/**
 * Follows the commit feed (commit-feed.ts) from a position: publishes the commits of other
 * processes in position order, every `pollMs`, and at once for a request that must see every commit
 * acknowledged before it arrived (`caughtUp`).
 */
export class CommitFeedFollower {
  /** Every position up to this one is published or skipped. */
  private published = -1;
  private gapSince: number | undefined;
  /** Skipped positions, with when: published should they show up (late). */
  private readonly missing = new Map<number, number>();
  private readonly seen = new BoundedCache<string, true>(SEEN_COMMITS);
  private readonly rounds = new SharedRead(() => this.round(), SHARED_READ_INTERVAL_MS);
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly reader: SparqlReader,
    private readonly options: FeedFollowerOptions,
  ) {}

  /** From `next`, the position the next commit was to take when this process read the engine's state. */
  start(next: number): void {
    this.published = next - 1;
    this.schedule(this.options.pollMs);
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  /**
   * Resolves once every commit acknowledged before the call (by any process) is published here: a
   * read of the feed started after the call, and everything it saw published. (A position not filled
   * when it was read belongs to a commit not acknowledged then, but what follows it waits for it.)
   */
  async caughtUp(): Promise<void> {
    const seen = await this.rounds.next();
    while (this.published < seen && !this.stopped) {
      await new Promise((resolve) => setTimeout(resolve, GAP_POLL_MS));
      await this.rounds.current();
    }
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.rounds
        .current()
        .catch((err: unknown) => this.options.log(`reading the commit feed failed: ${(err as Error).message}`))
        .finally(() => this.schedule(this.options.pollMs));
    }, ms);
    this.timer.unref();
  }

  /**
   * Reads what follows the last published position and publishes it, up to a gap not waited out yet; answers the
   * highest position seen.
   */
  private async round(): Promise<number> {
    let seen = this.published;
    for (;;) {
      const entries = await readFeed(this.reader, this.published, [...this.missing.keys()], BATCH);
      const now = Date.now();
      for (const entry of entries) seen = Math.max(seen, entry.position);
      const complete = this.take(entries, now);
      for (const [position, since] of this.missing) if (now - since > LATE_WINDOW_MS) this.missing.delete(position);
      if (!complete || entries.length < BATCH) return seen;
    }
  }

  /** Publishes `entries` in order; false when a gap stopped it. */
  private take(entries: readonly FeedEntry[], now: number): boolean {
    for (const entry of entries) {
      if (entry.position <= this.published) {
        if (this.missing.delete(entry.position)) {
          this.options.log(
            `commit feed: position ${entry.position} showed up after it was skipped; published out of order`,
          );
          this.deliver(entry);
        }
        continue;
      }
      if (entry.position > this.published + 1) {
        this.gapSince ??= now;
        if (now - this.gapSince < this.options.gapWaitMs) return false;
        for (let p = this.published + 1; p < entry.position && this.missing.size < LATE_POSITIONS; p++)
          this.missing.set(p, now);
        this.options.log(
          `commit feed: positions ${this.published + 1}-${entry.position - 1} not filled after ` +
            `${this.options.gapWaitMs} ms (operations the engine rolled back): skipped`,
        );
      }
      this.gapSince = undefined;
      this.published = entry.position;
      this.deliver(entry);
    }
    return true;
  }

  private deliver(entry: FeedEntry): void {
    if (this.options.isOwn(entry.intent) || this.seen.get(entry.intent)) return;
    this.seen.set(entry.intent, true);
    this.options.publish(parseEvents(entry.events));
    this.options.observeLag?.((Date.now() - entry.committedAt.getTime()) / 1000);
  }
}
