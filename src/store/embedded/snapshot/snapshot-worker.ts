import { readlinkSync } from 'node:fs';
import { constants, setPriority } from 'node:os';
import { parentPort } from 'node:worker_threads';
import { foldDataDirectory, type FoldRange, type Folded } from '../export/fold.js';
import { removeIndexImage, writeIndexImage, type IndexMemory } from '../image/index-image.js';
import { RevisionMetadata, revisionsToJson } from '../../schema/revisions.js';
import { writeSnapshotFile } from './snapshot.js';

export interface SnapshotJob {
  dir: string;
  range: FoldRange & { to: number };
  /** The index's memory as it was at the rotation to `range.to`: the image of the new snapshot. */
  image?: IndexMemory;
}
/** The memory image of the new snapshot written (its size), or why it could not be (the image there was removed). */
export type ImageWritten = { bytes: number } | { refused: string };
export type SnapshotReply = { folded: Folded; image?: ImageWritten } | { error: string };

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

/**
 * Writes the snapshot; with an image, its memory goes to the image's temp file first (the copy is
 * let go as it is written, not held while the fold runs), the revision metadata is taken from the
 * snapshot's lines as they are written, and the image is renamed into place once the snapshot is
 * complete. Else, or if the image fails, the image there (of an older snapshot) is removed.
 */
async function write({ dir, range, image }: SnapshotJob): Promise<SnapshotReply> {
  let folded: Folded | undefined;
  let written = false;
  const snapshot = async (metadata?: RevisionMetadata) => {
    await writeSnapshotFile(dir, range.to, async (write) => {
      folded = await foldDataDirectory(
        dir,
        range,
        metadata
          ? (data) => {
              metadata.addNQuads(data);
              return write(data);
            }
          : write,
        'refuse',
      );
    });
    written = true;
  };
  try {
    if (image) {
      try {
        const metadata = new RevisionMetadata();
        const bytes = await writeIndexImage(dir, image, async () => {
          await snapshot(metadata);
          return {
            quads: null,
            position: { snapshot: range.to, journal: [] },
            attachment: Buffer.from(revisionsToJson(metadata.records())),
          };
        });
        return { folded: folded!, image: { bytes } };
      } catch (err) {
        if (!written) throw err;
        await removeIndexImage(dir);
        return { folded: folded!, image: { refused: (err as Error).message } };
      }
    }
    await snapshot();
    await removeIndexImage(dir);
    return { folded: folded! };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

lowerPriority();
parentPort!.on('message', (job: SnapshotJob) => {
  void write(job).then((reply) => parentPort!.postMessage(reply));
});
