import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { removeSegmentsBefore, type Journal } from '../journal/journal.js';
import type { Archive } from '../archive/archive.js';
import type { OxigraphIndex } from '../oxigraph/oxigraph-index.js';
import { copyBuffers, type IndexMemory } from '../image/index-image.js';
import { copyIndexMemory } from '../image/image-lifecycle.js';
import { removeSnapshotsBefore, snapshotName } from './snapshot.js';
import { SnapshotThread } from './snapshot-thread.js';

/**
 * What a snapshot reads of the store writing it: the journal and archive it folds, whether it still matches them, its
 * size.
 */
export interface SnapshotSubject {
  index: OxigraphIndex;
  journal(): Journal;
  archive(): Archive;
  failed(): boolean;
  quads(): number;
}

export interface SnapshotsOptions {
  dataDir: string;
  log: (message: string) => void;
  observer?: { snapshotWritten(seconds: number): void };
}

/** The store's snapshots: the newest one and its size, and writing the next on a low-priority thread. */
export class Snapshots {
  /** The newest snapshot (it holds segments before this number), and its size. */
  segment: number | undefined;
  bytes = 0;
  private readonly thread = new SnapshotThread();
  private running: Promise<void> | undefined;

  constructor(
    private readonly store: SnapshotSubject,
    private readonly options: SnapshotsOptions,
  ) {}

  /** Takes `segment` as the newest snapshot, found on disk at start. */
  async found(segment: number): Promise<void> {
    this.segment = segment;
    this.bytes = (await stat(join(this.options.dataDir, snapshotName(segment)))).size;
  }

  /** The snapshot under way, if any. */
  get underWay(): Promise<void> | undefined {
    return this.running;
  }

  /**
   * Folds the journal into a snapshot (concurrent calls share one run): the journal moves to a new segment and a
   * worker folds the previous snapshot and the closed segments from the files, so requests are not held up.
   * `withImage`: copy the index's memory at the rotation as the snapshot's memory image (docs/storage.md,
   * "Memory image").
   */
  write(withImage: boolean): Promise<void> {
    // After a failed apply the index no longer matches the journal: only a restart (replay) rebuilds it.
    if (this.store.failed()) return Promise.resolve();
    this.running ??= this.run(withImage).finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async run(withImage: boolean): Promise<void> {
    const { dataDir, log } = this.options;
    try {
      const started = Date.now();
      const buffers = withImage ? await copyBuffers(this.store.index) : undefined;
      let image: IndexMemory | undefined;
      let copyMs = 0;
      const segment = await this.store.journal().rotate(
        buffers
          ? () => {
              const copying = performance.now();
              image = this.store.failed() ? undefined : copyIndexMemory(this.store.index, buffers, log);
              copyMs = performance.now() - copying;
            }
          : undefined,
      );
      // Start replays from this snapshot on, never the segments before it: what the archive
      // took from them must be on disk before the snapshot exists.
      await this.store.archive().flushed();
      const base = this.segment;
      const { folded, image: imaged } = await this.thread.write(
        dataDir,
        { snapshot: base, from: base ?? 1, to: segment },
        image,
      );
      await this.found(segment);
      await removeSegmentsBefore(dataDir, segment);
      await removeSnapshotsBefore(dataDir, segment);
      this.options.observer?.snapshotWritten((Date.now() - started) / 1000);
      const imageText = !imaged
        ? ''
        : 'bytes' in imaged
          ? `; memory image copied in ${Math.round(copyMs)} ms, ${Math.round(imaged.bytes / 2 ** 20)} MiB written`
          : `; no memory image: ${imaged.refused}`;
      log(
        `snapshot ${segment} written in ${Date.now() - started} ms (${folded.lines} lines from ${folded.records} ` +
          `journal records; store holds ${this.store.quads()} quads${imageText})`,
      );
    } catch (err) {
      log(`snapshot failed (journal kept, nothing lost): ${(err as Error).message}`);
    }
  }

  /** Stops the snapshot thread (after the last snapshot). */
  close(): Promise<void> {
    return this.thread.close();
  }
}
