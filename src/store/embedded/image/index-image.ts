import { type FileHandle, open, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { listSegments, segmentName, syncDirectory, writeFileDurably } from '../journal/journal.js';
import { bindingsForImage, heldValues, wasmDigest, type HeldValues } from '../oxigraph/oxigraph-bindings.js';
import { OxigraphIndex } from '../oxigraph/oxigraph-index.js';
import { SYNC_EVERY_BYTES } from '../snapshot/snapshot.js';

/*
 * A memory image of the hot index (Oxigraph's WASM memory), written at each snapshot and clean stop
 * and read straight back at start, because loading the snapshot's N-Quads is slow. A shortcut, never a
 * source of truth: a start takes it only if its snapshot is still the newest and the journal still
 * holds the bytes it reflects, else loads the snapshot (docs/storage.md).
 */

export const IMAGE_FILE = 'index.image';
const MAGIC = 'onerecord index image 2\n';
/** The header (JSON, padded with spaces) takes this many bytes before the memory. */
const HEADER_BYTES = 64 * 1024;
/** The memory is written and read in chunks of this size; chunks of zeros are not written (holes in the file). */
const CHUNK_BYTES = 4 * 1024 * 1024;

/**
 * What an image reflects: a snapshot, and the bytes of the journal segments after it (none for an image taken at the
 * snapshot).
 */
export interface StorePosition {
  snapshot: number | null;
  journal: [segment: number, bytes: number][];
}

/**
 * The index's memory as an image holds it: per chunk of CHUNK_BYTES its bytes, or undefined when known to be all zeros.
 */
export interface IndexMemory {
  storePointer: number;
  memoryBytes: number;
  held: HeldValues;
  chunks: (Uint8Array | undefined)[];
}

/** What an image says besides the memory, known once what it reflects is complete. */
export interface ImageContents {
  /** Quads the store holds, when counted (a count costs a pass over the store). */
  quads: number | null;
  position: StorePosition;
  /** What the store reads from the index at start (the revision metadata), as it stands. */
  attachment: Buffer;
}

interface ImageHeader extends Omit<IndexMemory, 'chunks'>, Omit<ImageContents, 'attachment'> {
  wasm: string;
  /**
   * One character per chunk of the memory: '1' written, '0' all zeros (a hole in the file, left as a new memory has
   * it).
   */
  chunks: string;
  /** Bytes of the attachment, after the memory. */
  attachmentBytes: number;
  /** CRC-32 of the chunks written, the attachment and the other fields of the header (headerText). */
  crc: number;
}

/** The data directory's position: its newest snapshot, and the journal segments from it on with their sizes. */
export async function storePosition(dir: string, snapshot: number | undefined): Promise<StorePosition> {
  const segments = (await listSegments(dir)).filter((n) => n >= (snapshot ?? 1));
  const journal = await Promise.all(
    segments.map(async (n): Promise<[number, number]> => [n, (await stat(join(dir, segmentName(n)))).size]),
  );
  return { snapshot: snapshot ?? null, journal };
}

const samePosition = (a: StorePosition, b: StorePosition) => JSON.stringify(a) === JSON.stringify(b);

/**
 * Whether an image at `position` is the image of a snapshot (copied at its rotation, no journal in it), not of a clean
 * stop.
 */
const ofSnapshot = (position: StorePosition) => position.journal.length === 0;

/**
 * Whether the data directory at `now` holds what an image at `image` reflects. A snapshot's image
 * stays good while that snapshot is the newest (the journal after it is replayed over it); a clean
 * stop's image only where the journal is exactly what it reflects, since replaying more over it is
 * unsafe, and that start removes it.
 */
function reflects(image: StorePosition, now: StorePosition): boolean {
  return ofSnapshot(image) ? image.snapshot === now.snapshot : samePosition(image, now);
}

/**
 * Buffers for a copy of the index's memory (see indexMemory), one per chunk that is not all zeros,
 * allocated and written a chunk per turn of the event loop: memory new to the process page-faults when
 * first written, which slows a copy that requests wait for.
 */
export async function copyBuffers(index: OxigraphIndex): Promise<(Uint8Array | undefined)[]> {
  const buffers: (Uint8Array | undefined)[] = [];
  for (let at = 0; ; at += CHUNK_BYTES) {
    // Read again each turn: a write meanwhile may have grown the memory (a new buffer).
    const memory = new Uint8Array(index.memory.bindings.allocator.memory.buffer);
    if (at >= memory.length) return buffers;
    const chunk = memory.subarray(at, Math.min(memory.length, at + CHUNK_BYTES));
    buffers.push(isZero(chunk) ? undefined : new Uint8Array(chunk.length).fill(1));
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/**
 * The index's memory as an image holds it, or why there can be none. With `buffers` (copyBuffers),
 * a copy: each chunk goes into its buffer, or, if it has none and is not all zeros, into a new one;
 * the copy stays as the index was at this instant while it changes on, and a thread can take it.
 * Without, views of the live memory, valid only while nothing runs in it.
 */
export function indexMemory(index: OxigraphIndex, buffers?: (Uint8Array | undefined)[]): IndexMemory | string {
  const { bindings, storePointer } = index.memory;
  const held = heldValues(bindings);
  if (typeof held === 'string') return held;
  const memory = new Uint8Array(bindings.allocator.memory.buffer);
  const chunks: IndexMemory['chunks'] = [];
  for (let at = 0, i = 0; at < memory.length; at += CHUNK_BYTES, i++) {
    const chunk = memory.subarray(at, Math.min(memory.length, at + CHUNK_BYTES));
    const buffer = buffers?.[i];
    if (!buffers) chunks.push(chunk);
    else if (buffer?.length === chunk.length) {
      buffer.set(chunk);
      chunks.push(buffer);
    } else chunks.push(isZero(chunk) ? undefined : chunk.slice());
  }
  return { storePointer, memoryBytes: memory.length, held, chunks };
}

/**
 * Writes an image of `memory` (temp file, fsync, rename, fsync dir): the memory first, each chunk
 * let go once written (a copy is not held longer than it must), then `complete` is awaited for the
 * rest (an image taken at a snapshot is complete once the snapshot is). The file is renamed only
 * then; if `complete` or a write fails, nothing is left. Returns the image's size.
 */
export async function writeIndexImage(
  dir: string,
  memory: IndexMemory,
  complete: () => Promise<ImageContents>,
): Promise<number> {
  const { storePointer, memoryBytes, held, chunks } = memory;
  let bytes = 0;
  await writeFileDurably(dir, IMAGE_FILE, async (file) => {
    let crc = 0;
    let flags = '';
    let unsynced = 0;
    for (const [i, chunk] of chunks.entries()) {
      const written = chunk !== undefined && !isZero(chunk);
      flags += written ? '1' : '0';
      if (!written) continue;
      crc = crc32(chunk, crc);
      await file.write(chunk, 0, chunk.length, HEADER_BYTES + i * CHUNK_BYTES);
      chunks[i] = undefined;
      // As a snapshot is: one fsync of gigabytes at the end would hold the disk, and the journal's fdatasync behind it,
      // for seconds.
      unsynced += chunk.length;
      if (unsynced >= SYNC_EVERY_BYTES) {
        await file.datasync();
        unsynced = 0;
      }
    }
    await file.truncate(HEADER_BYTES + memoryBytes);
    const { quads, position, attachment } = await complete();
    const header: Omit<ImageHeader, 'crc'> = {
      wasm: wasmDigest(),
      storePointer,
      memoryBytes,
      held,
      quads,
      position,
      chunks: flags,
      attachmentBytes: attachment.length,
    };
    const text = (crc: number) => `${MAGIC}${JSON.stringify({ ...header, crc })}\n`;
    if (text(0).length + 20 > HEADER_BYTES) throw new Error('its header would not fit');
    crc = crc32(attachment, crc);
    await file.write(attachment, 0, attachment.length, HEADER_BYTES + memoryBytes);
    await file.write(text(crc32(headerText(header), crc)).padEnd(HEADER_BYTES, ' '), 0);
    bytes = HEADER_BYTES + memoryBytes + attachment.length;
  });
  return bytes;
}

/** The header's fields as the checksum covers them, in a fixed order. */
function headerText(header: Omit<ImageHeader, 'crc'>): string {
  const { wasm, storePointer, memoryBytes, held, quads, position, chunks, attachmentBytes } = header;
  return JSON.stringify([wasm, storePointer, memoryBytes, held, quads, position, chunks, attachmentBytes]);
}

const ZEROS = new Uint8Array(CHUNK_BYTES);
const isZero = (chunk: Uint8Array) => Buffer.compare(chunk, ZEROS.subarray(0, chunk.length)) === 0;

/**
 * Reads the image in `dir`, if there is one: an index restored from it when it reflects the data
 * directory at `position` (see reflects) and is complete and undamaged, else undefined with a log
 * line saying why. `ofSnapshot`: it is the image of a snapshot, which stays while that snapshot is
 * the newest and has the journal after it replayed over it; else a clean stop's, which reflects the
 * whole journal (replaying it changes nothing).
 */
export async function readIndexImage(
  dir: string,
  position: StorePosition,
  log: (message: string) => void,
): Promise<{ index: OxigraphIndex; quads: number | null; ofSnapshot: boolean; attachment: Buffer } | undefined> {
  const path = join(dir, IMAGE_FILE);
  let file: FileHandle;
  try {
    file = await open(path, 'r');
  } catch {
    return undefined;
  }
  try {
    const started = performance.now();
    const refused = (why: string) => {
      log(`memory image ${IMAGE_FILE} not used (${why}): the store loads its snapshot`);
      return undefined;
    };
    const head = Buffer.alloc(HEADER_BYTES);
    const { bytesRead } = await file.read(head, 0, HEADER_BYTES, 0);
    const text = head.toString('utf8', 0, bytesRead);
    if (bytesRead < HEADER_BYTES || !text.startsWith(MAGIC)) return refused('not an image, or cut short');
    let header: ImageHeader;
    try {
      header = JSON.parse(text.slice(MAGIC.length)) as ImageHeader;
    } catch {
      return refused('its header is damaged');
    }
    if (header.wasm !== wasmDigest()) return refused('written by another version of Oxigraph');
    if (!reflects(header.position, position))
      return refused('it does not reflect the newest snapshot and the journal after it');
    if (
      (await file.stat()).size !== HEADER_BYTES + header.memoryBytes + header.attachmentBytes ||
      header.chunks.length !== Math.ceil(header.memoryBytes / CHUNK_BYTES)
    )
      return refused('its size does not match its header');
    const bindings = bindingsForImage(header.memoryBytes, header.held);
    let crc = await readChunks(file, new Uint8Array(bindings.allocator.memory.buffer), header.chunks);
    if (crc === undefined) return refused('cut short');
    const attachment = Buffer.alloc(header.attachmentBytes);
    if (
      (await file.read(attachment, 0, attachment.length, HEADER_BYTES + header.memoryBytes)).bytesRead !==
      attachment.length
    )
      return refused('cut short');
    crc = crc32(attachment, crc);
    const { crc: expected, ...checked } = header;
    if (crc32(headerText(checked), crc) !== expected) return refused('damaged: checksum mismatch');
    const index = new OxigraphIndex(0, bindings, header.storePointer);
    const journal =
      header.position.journal.length > 0
        ? ` and ${header.position.journal.reduce((sum, [, bytes]) => sum + bytes, 0)} journal bytes`
        : '';
    log(
      `memory image of snapshot ${header.position.snapshot ?? 'none'}${journal} ` +
        `(${Math.round(header.memoryBytes / 2 ** 20)} MiB) read in ${Math.round(performance.now() - started)} ms`,
    );
    return { index, quads: header.quads, ofSnapshot: ofSnapshot(header.position), attachment };
  } catch (err) {
    log(`memory image ${IMAGE_FILE} not used (${(err as Error).message}): the store loads its snapshot`);
    return undefined;
  } finally {
    await file.close();
  }
}

/**
 * Reads the chunks an image holds (`chunks`: '1' for each chunk written) into `memory`; answers their
 * checksum, or undefined when the file is cut short.
 */
async function readChunks(file: FileHandle, memory: Uint8Array, chunks: string): Promise<number | undefined> {
  let crc = 0;
  const written = [...chunks].flatMap((c, i) => (c === '1' ? [i * CHUNK_BYTES] : []));
  const read = (at: number) => file.read(memory, at, Math.min(CHUNK_BYTES, memory.length - at), HEADER_BYTES + at);
  // The disk reads the next chunk while this one's checksum is taken.
  let next = written.length > 0 ? read(written[0]) : undefined;
  for (let i = 0; next; i++) {
    const at = written[i];
    const { bytesRead: got } = await next;
    if (got !== Math.min(CHUNK_BYTES, memory.length - at)) return undefined;
    next = i + 1 < written.length ? read(written[i + 1]) : undefined;
    crc = crc32(memory.subarray(at, at + got), crc);
  }
  return crc;
}

/** Removes the image (unless `keep`) and the temp file of one never finished, durably. */
export async function removeIndexImage(dir: string, keep = false): Promise<void> {
  let removed = false;
  for (const name of keep ? [`${IMAGE_FILE}.tmp`] : [IMAGE_FILE, `${IMAGE_FILE}.tmp`]) {
    removed =
      (await rm(join(dir, name)).then(
        () => true,
        () => false,
      )) || removed;
  }
  if (removed) await syncDirectory(dir);
}
