import type { ReplicaLag } from '../../query-service.js';

/** When each of the last this many commits was acknowledged (for the lag of an answer). */
const KEPT = 1 << 17;

/**
 * When each recent commit (numbered from 1 in publishing order) was acknowledged: how far behind
 * the replica's answers are, and how long each commit took to become visible to queries.
 */
export class CommitTimes {
  private readonly times = new Float64Array(KEPT);

  /** Commit `n` is acknowledged now. */
  record(n: number): void {
    this.times[n % KEPT] = performance.now();
  }

  /** How far a replica that applied commit `position` is behind commit `target`, the last being `last`. */
  lag(position: number, target: number, last: number): ReplicaLag {
    const commits = Math.max(0, target - position);
    if (commits === 0) return { commits, millis: 0 };
    // The oldest write not shown, or the oldest whose time is still kept.
    const oldest = Math.max(position + 1, last - KEPT + 1);
    return { commits, millis: Math.round(performance.now() - this.times[oldest % KEPT]) };
  }

  /** Tells `observe` the seconds since each commit from `from` to `to` was acknowledged, those whose times are kept. */
  observeSince(from: number, to: number, last: number, observe: (seconds: number) => void): void {
    const now = performance.now();
    for (let n = Math.max(from, last - KEPT + 1); n <= to; n++) observe((now - this.times[n % KEPT]) / 1000);
  }
}
