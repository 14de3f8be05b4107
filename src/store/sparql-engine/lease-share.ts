import type { SparqlReader } from '../readers.js';
import { lastSeen } from './process-liveness.js';

/**
 * One process's part of a set of leases (one per group of delivery queues): it takes a lease only while it holds
 * fewer than its fair share, the leases divided by the live processes rounded up, and lets those beyond it lapse, so
 * that the processes share the work and a dead one's leases go to the others once it is taken for dead
 * (docs/sparql-engine.md, "Several processes").
 */
export class LeaseShare {
  /** The leases this process holds, those it is claiming now, and those it lets lapse. */
  private readonly held = new Set<object>();
  private readonly claiming = new Set<object>();
  private readonly leaving = new Set<object>();
  private live = 1;
  private countedAt = 0;
  private counting: Promise<void> | undefined;

  constructor(
    private readonly reader: SparqlReader,
    private readonly leases: number,
    /** A process not seen alive for this long is not counted (process-liveness.ts). */
    private readonly deadAfterMs: number,
    /** The live processes are counted again at most this often. */
    private readonly countEveryMs: number,
  ) {}

  private get share(): number {
    return Math.ceil(this.leases / this.live);
  }

  /** Whether `lease` may try to take its lease now; if so it counts as held until `claimEnded`. */
  async mayClaim(lease: object): Promise<boolean> {
    await this.count();
    if (this.held.size + this.claiming.size >= this.share) return false;
    this.claiming.add(lease);
    return true;
  }

  /** The claim `mayClaim` allowed is over: `lease` counts as held from `gained` on, if it was. */
  claimEnded(lease: object): void {
    this.claiming.delete(lease);
  }

  /**
   * `lease` is held by this process: counted whichever way it came, a claim or a renewal that ended after the lease
   * had lapsed (a slow engine), so that a process never holds more than it counts and keeps them beyond its share.
   */
  gained(lease: object): void {
    this.claiming.delete(lease);
    this.held.add(lease);
  }

  /** Whether the holder of `lease` renews it: the leases beyond the share are not renewed, and lapse. */
  async keeps(lease: object): Promise<boolean> {
    await this.count();
    if (this.leaving.has(lease)) return false;
    if (this.held.size - this.leaving.size <= this.share) return true;
    this.leaving.add(lease);
    return false;
  }

  /** `lease` is no longer held by this process. */
  dropped(lease: object): void {
    this.held.delete(lease);
    this.leaving.delete(lease);
  }

  /** Counts the live processes (this one included), once per `countEveryMs` for all the leases. */
  private count(): Promise<void> {
    if (Date.now() - this.countedAt < this.countEveryMs) return Promise.resolve();
    this.counting ??= lastSeen(this.reader)
      .then((seen) => {
        const since = Date.now() - this.deadAfterMs;
        this.live = Math.max(1, [...seen.values()].filter((at) => at >= since).length);
        this.countedAt = Date.now();
      })
      .finally(() => {
        this.counting = undefined;
      });
    return this.counting;
  }
}
