import { Worker } from 'node:worker_threads';
import type { FoldRange, Folded } from '../export/fold.js';
import type { IndexMemory } from '../image/index-image.js';
import type { ImageWritten, SnapshotJob, SnapshotReply } from './snapshot-worker.js';

/** A snapshot written, and what became of the memory image. */
export interface SnapshotDone {
  folded: Folded;
  /** Undefined when none was asked for (the image there was removed). */
  image?: ImageWritten;
}

/**
 * The thread that writes snapshots (snapshot-worker.ts) from the files, never the store in memory, so the request
 * thread only waits for the answer; started by the first snapshot (a store that never takes one never loads the
 * thread's code and WASM), one job at a time, restarted if it dies. Once a
 * snapshot is complete it writes the memory image handed over at the rotation, or removes the old one
 * (docs/storage.md, "Start and snapshots" and "Memory image").
 */
export class SnapshotThread {
  private worker?: Worker;
  private running?: { resolve(done: SnapshotDone): void; reject(err: Error): void };

  write(dir: string, range: FoldRange & { to: number }, image?: IndexMemory): Promise<SnapshotDone> {
    if (this.running) return Promise.reject(new Error('a snapshot is already being written'));
    this.worker ??= this.spawn();
    const worker = this.worker;
    worker.ref(); // a snapshot being written keeps the process alive (as at shutdown)
    return new Promise<SnapshotDone>((resolve, reject) => {
      this.running = { resolve, reject };
      const buffers = (image?.chunks ?? []).flatMap((chunk) => (chunk ? [chunk.buffer as ArrayBuffer] : []));
      worker.postMessage({ dir, range, image } satisfies SnapshotJob, buffers);
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
    const settle = (outcome: SnapshotDone | Error) => {
      const running = this.running;
      this.running = undefined;
      if (outcome instanceof Error) running?.reject(outcome);
      else running?.resolve(outcome);
    };
    worker.on('message', (reply: SnapshotReply) => settle('folded' in reply ? reply : new Error(reply.error)));
    worker.on('error', (err) => settle(err));
    worker.on('exit', (code) => {
      if (this.worker === worker) this.worker = undefined;
      settle(new Error(`the snapshot thread stopped (exit code ${code})`));
    });
    return worker;
  }
}
