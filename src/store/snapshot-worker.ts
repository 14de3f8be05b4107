import { readlinkSync } from 'node:fs';
import { constants, setPriority } from 'node:os';
import { parentPort } from 'node:worker_threads';
import { foldDataDirectory, type FoldRange, type Folded } from './fold.js';
import { writeSnapshotFile } from './snapshot.js';

export interface SnapshotJob {
  dir: string;
  range: FoldRange & { to: number };
}
export type SnapshotReply = { folded: Folded } | { error: string };

/**
 * The snapshot thread (see snapshot-thread.ts). It runs below normal CPU priority: requests on the
 * main thread come first, yet a snapshot still moves on when the CPU is saturated (at the lowest
 * priority it could starve, and the journal would grow without end).
 */
function lowerPriority(): void {
  try {
    // On Linux a thread is a task of its own: /proc/thread-self names this one.
    setPriority(Number(readlinkSync('/proc/thread-self').split('/').pop()), constants.priority.PRIORITY_BELOW_NORMAL);
  } catch {
    // Elsewhere the fold runs at normal priority, still off the request thread.
  }
}

async function write(job: SnapshotJob): Promise<SnapshotReply> {
  try {
    let folded: Folded | undefined;
    await writeSnapshotFile(job.dir, job.range.to, async (write) => {
      folded = await foldDataDirectory(job.dir, job.range, write, 'refuse');
    });
    return { folded: folded! };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

lowerPriority();
parentPort!.on('message', (job: SnapshotJob) => {
  void write(job).then((reply) => parentPort!.postMessage(reply));
});
