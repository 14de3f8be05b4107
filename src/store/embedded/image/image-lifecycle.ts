import type { OxigraphIndex } from '../oxigraph/oxigraph-index.js';
import { readRevisions, revisionsFromJson, revisionsToJson, type RevisionRecord } from '../../schema/revisions.js';
import {
  indexMemory,
  readIndexImage,
  storePosition,
  writeIndexImage,
  type IndexMemory,
  type StorePosition,
} from './index-image.js';

/*
 * When the store takes and writes the memory image of its index (index-image.ts holds the file
 * itself): taken at start, written at a clean stop and, with imageAtSnapshot, at each snapshot.
 */

export interface ImageOptions {
  dataDir: string;
  memoryImage?: boolean;
  memoryImageMinQuads?: number;
  memoryReserveBytes: number;
  log: (message: string) => void;
}

/**
 * An image a start took: the quads it holds, the revision metadata it carries, whether it reflects a snapshot alone.
 */
export interface TakenImage {
  quads: number;
  revisions: RevisionRecord[];
  ofSnapshot: boolean;
}

/**
 * Starts `index` from the memory image in the data directory, if there is one that reflects the
 * data directory at `position` (see index-image.ts); undefined when the snapshot is to be loaded.
 * The journal after the snapshot is replayed over it all the same: each quad ends as the last
 * record touching it left it, whatever the image held of the records, and the archive takes from
 * them what it lacks.
 */
export async function takeImage(
  index: OxigraphIndex,
  position: StorePosition,
  options: ImageOptions,
): Promise<TakenImage | undefined> {
  const { dataDir, log, memoryImage, memoryReserveBytes } = options;
  if (!memoryImage) return undefined;
  const image = await readIndexImage(dataDir, position, log);
  if (!image) return undefined;
  let held = -1;
  let refused: string | undefined;
  try {
    held = image.index.size;
  } catch (err) {
    refused = `its store cannot be read: ${(err as Error).message}`;
  }
  if (!refused && image.quads !== null && held !== image.quads)
    refused = `its store holds ${held} quads, its header says ${image.quads}`;
  // As a start from the snapshot (roomToLoad): the store must hold with half the reserve free.
  if (!refused && !image.index.makeRoom(0, memoryReserveBytes / 2))
    refused = `it leaves less than half of store.memoryReserveBytes (${memoryReserveBytes}) free`;
  if (refused) {
    // Its WASM instance, referenced no more, goes with its memory once garbage collected.
    log(`memory image not used (${refused}): the store loads its snapshot`);
    return undefined;
  }
  index.takeOver(image.index);
  return { quads: held, revisions: revisionsFromJson(image.attachment.toString('utf8')), ofSnapshot: image.ofSnapshot };
}

/**
 * Whether an image is worth its cost: writing one reads the whole WASM memory, at least the
 * reserve, which on a small store costs more than loading the snapshot at start would.
 */
export function imageWorthWriting(options: ImageOptions, quads: number): boolean {
  return options.memoryImage === true && quads >= (options.memoryImageMinQuads ?? 0);
}

/** A copy of the index's memory for the image of a snapshot, taken at its rotation; undefined if there can be none. */
export function copyIndexMemory(
  index: OxigraphIndex,
  buffers: (Uint8Array | undefined)[],
  log: (message: string) => void,
): IndexMemory | undefined {
  try {
    const memory = indexMemory(index, buffers);
    if (typeof memory !== 'string') return memory;
    log(`no memory image at this snapshot: ${memory}`);
  } catch (err) {
    log(`no memory image at this snapshot: ${(err as Error).message}`);
  }
  return undefined;
}

/**
 * Writes the memory image of the index (index-image.ts) once nothing can change it or the files
 * it reflects: the journal and archive are closed. A failure costs the next start its shortcut only.
 */
export async function writeImage(
  index: OxigraphIndex,
  snapshotSegment: number | undefined,
  options: ImageOptions,
): Promise<void> {
  const { dataDir, log } = options;
  const started = Date.now();
  try {
    const position = await storePosition(dataDir, snapshotSegment);
    // Counted, not the store's own count: that is counted from what records insert and delete, some of which was there
    // already or not.
    const quads = index.size;
    const attachment = Buffer.from(revisionsToJson(readRevisions(index)));
    // A copy, taken in the same tick as the count and the metadata: a request cut off by the
    // drain may still be running and call into the index while the image is written for seconds.
    const memory = indexMemory(index, []);
    if (typeof memory === 'string') throw new Error(memory);
    const bytes = await writeIndexImage(dataDir, memory, () => Promise.resolve({ quads, position, attachment }));
    log(`memory image of ${quads} quads written in ${Date.now() - started} ms (${Math.round(bytes / 2 ** 20)} MiB)`);
  } catch (err) {
    // What is there reflects an older state of the journal: still right, but written again at the next snapshot or
    // stop.
    log(`no memory image written (the next start loads the snapshot or the image there): ${(err as Error).message}`);
  }
}
