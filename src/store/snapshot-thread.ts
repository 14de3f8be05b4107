import { Worker } from 'node:worker_threads';
import type { FoldRange, Folded } from './fold.js';
import type { SnapshotJob, SnapshotReply } from './snapshot-worker.js';

/**
 * The thread that writes snapshots (snapshot-worker.ts): snapshot `range.to` is the fold of the
 * previous snapshot and the journal segments before `range.to`, which the journal has closed. The
 * store in memory is not read, so the request thread only waits for the answer. The worker is
 * started with the store (its Oxigraph loads meanwhile, so a snapshot starts at once), takes one
 * job at a time, and is started again if it dies.
 */
export class SnapshotThread {
  private worker?: Worker;
  private running?: { resolve(folded: Folded): void; reject(err: Error): void };

  constructor() {
    this.worker = this.spawn();
  }

  write(dir: string, range: FoldRange & { to: number }): Promise<Folded> {
    if (this.running) return Promise.reject(new Error('a snapshot is already being written'));
    this.worker ??= this.spawn();
    const worker = this.worker;
    worker.ref(); // a snapshot being written keeps the process alive (as at shutdown)
    return new Promise<Folded>((resolve, reject) => {
      this.running = { resolve, reject };
      worker.postMessage({ dir, range } satisfies SnapshotJob);
    }).finally(() => worker.unref());
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    await worker?.terminate();
  }

  private spawn(): Worker {
    const worker = new Worker(new URL('./snapshot-worker.js', import.meta.url));
    worker.unref(); // idle, it never keeps a process alive
    const settle = (outcome: Folded | Error) => {
      const running = this.running;
      this.running = undefined;
      if (outcome instanceof Error) running?.reject(outcome);
      else running?.resolve(outcome);
    };
    worker.on('message', (reply: SnapshotReply) => settle('folded' in reply ? reply.folded : new Error(reply.error)));
    worker.on('error', (err) => settle(err));
    worker.on('exit', (code) => {
      if (this.worker === worker) this.worker = undefined;
      settle(new Error(`the snapshot thread stopped (exit code ${code})`));
    });
    return worker;
  }
}
