import type { Worker } from 'node:worker_threads';
import { packCommits, type ReplicaCommit } from './replica-commits.js';
import type { WorkerRequest } from './messages.js';

/**
 * One batch of commits at most (a query the worker gets meanwhile waits for this batch only, a fraction of a second).
 */
const BATCH_COMMITS = 250;
const BATCH_BYTES = 2 * 1024 * 1024;

/**
 * What one replica worker has been fed and has applied. Commits reach it in commit order: none
 * before its copy of the store begins (`attach`: the copy holds them), then, while it loads, each
 * as it comes, between the parts of the copy; once loaded, whatever queued while it was busy, as
 * one batch when it is done with the last. Positions count commits since the server started.
 */
export class ReplicaFeed {
  /** The last commit the worker has applied. */
  applied = 0;
  /** The worker has applied its whole copy (it said so with its first `applied`). */
  copied = false;
  /** It is getting its copy of the store. */
  loading = true;
  /**
   * What it last said of a long growth point it is near (a successor says so before it serves: acted on when it takes
   * over).
   */
  nearGrowth?: { loadedQuads: number; point: number };
  private attached = false;
  /** Commits not yet sent, in order, the last of them numbered `queuedThrough`. */
  private unsent: ReplicaCommit[] = [];
  private queuedThrough = 0;
  /** Bytes of the commits in `unsent`; while it loads, of those posted to it since its copy began. */
  private unsentBytes = 0;
  private sending = false;

  constructor(
    readonly worker: Worker,
    /** Started to take over from the worker serving now (see BudgetedWorker.startSuccessor). */
    readonly successor: boolean,
    /** The worker could not take commits (they could not be posted): it must be given up. */
    private readonly failed: (feed: ReplicaFeed, why: string) => void,
  ) {}

  /** Commits waiting to be sent to the worker. */
  get waitingCommits(): number {
    return this.unsent.length;
  }

  /** Its copy begins now: the commits before are in it. */
  attach(): void {
    this.attached = true;
    this.unsent = [];
    this.unsentBytes = 0;
  }

  /** Its copy is all sent, up to commit `position`; commits queue from now on. */
  loaded(position: number): void {
    this.worker.postMessage({ kind: 'loaded', position } satisfies WorkerRequest);
    this.loading = false;
    this.unsentBytes = 0;
    this.send();
  }

  /**
   * Commit number `position`; how many bytes of commits wait for the worker (while it loads: were posted to it since
   * its copy began).
   */
  add(commit: ReplicaCommit, position: number): number {
    if (!this.attached) return 0;
    this.unsentBytes += commit.insert.byteLength + commit.delete.byteLength;
    if (this.loading) {
      // Between the parts of the copy, as it comes: a part read after this commit holds it too (see ReplicaStore).
      this.post([commit], position);
    } else {
      this.unsent.push(commit);
      this.queuedThrough = position;
      this.send();
    }
    return this.unsentBytes;
  }

  /** The worker has applied every commit up to `position`. */
  onApplied(position: number): void {
    this.applied = position;
    this.copied = true;
    this.sending = false;
    this.send();
  }

  /**
   * Whether every commit so far is with the worker, so that a query sent now runs after them (the
   * worker takes its messages in order): what waits for it is sent at once, as one more batch, if
   * it is no more than one batch; a longer backlog is not (the query waits for it, see QueryReplica.run).
   */
  flushed(): boolean {
    if (this.loading) return false;
    if (this.unsent.length === 0) return true;
    if (this.unsent.length > BATCH_COMMITS || this.unsentBytes > BATCH_BYTES) return false;
    this.send(true);
    return this.unsent.length === 0;
  }

  /** Sends the worker what queued while it was busy, as one batch, unless it is busy still (or `now`). */
  private send(now = false): void {
    if (this.loading || (this.sending && !now) || this.unsent.length === 0) return;
    let count = 0;
    let bytes = 0;
    while (count < this.unsent.length && count < BATCH_COMMITS && bytes < BATCH_BYTES) {
      bytes += this.unsent[count].insert.byteLength + this.unsent[count].delete.byteLength;
      count++;
    }
    const position = this.queuedThrough - this.unsent.length + count;
    this.unsentBytes -= bytes;
    this.sending = this.post(this.unsent.splice(0, count), position);
  }

  /**
   * Hands commits to the worker (packed into one buffer, which is moved, not copied again); false if it could not take
   * them.
   */
  private post(commits: ReplicaCommit[], position: number): boolean {
    try {
      const packed = packCommits(commits);
      this.worker.postMessage({ kind: 'commits', commits: packed, position } satisfies WorkerRequest, [
        packed.bytes.buffer as ArrayBuffer,
      ]);
      return true;
    } catch (err) {
      // The write is durable whatever happens here; a replica that missed commits is copied again.
      this.failed(this, `it could not take ${commits.length} commits (${(err as Error).message})`);
      return false;
    }
  }
}
