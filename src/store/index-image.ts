import { open, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { listSegments, segmentName, syncDirectory, writeFileDurably } from './journal.js';
import { bindingsForImage, heldValues, wasmDigest, type HeldValues } from './oxigraph-bindings.js';
import { OxigraphIndex } from './oxigraph-index.js';

/*
 * A memory image of the hot index: on a clean stop, the WASM linear memory that holds the
 * Oxigraph store is written to one file; the next start reads it straight back into the memory of
 * a new instance of the same WASM code, instead of parsing the snapshot's N-Quads into a new store
 * (Oxigraph's load runs at ~3-5 us a quad). The image is a shortcut, never a source of truth:
 * it says which snapshot and journal it reflects, a start takes it only if they are still exactly
 * what the data directory holds, and every start removes it once it has recovered, before anything
 * is written, so a later crash can never bring back a stale one (a start that fails leaves the
 * directory as it was, image included). Any mismatch or damage: the start loads the snapshot.
 */

export const IMAGE_FILE = 'index.image';
const MAGIC = 'onerecord index image 1\n';
/** The header (JSON, padded with spaces) takes this many bytes before the memory. */
const HEADER_BYTES = 64 * 1024;
/** The memory is written and read in chunks of this size; chunks of zeros are not written (holes in the file). */
const CHUNK_BYTES = 4 * 1024 * 1024;

/** What an image reflects: the snapshot the data directory starts from, and the journal segments after it with their sizes. */
export interface StorePosition {
  snapshot: number | null;
  journal: [segment: number, bytes: number][];
}

interface ImageHeader {
  wasm: string;
  storePointer: number;
  memoryBytes: number;
  held: HeldValues;
  quads: number;
  position: StorePosition;
  /** One character per chunk of the memory: '1' written, '0' all zeros (a hole in the file, left as a new memory has it). */
  chunks: string;
  /** Bytes of the attachment, after the memory. */
  attachmentBytes: number;
  /** CRC-32 of the chunks written, the attachment and the other fields of the header (headerText). */
  crc: number;
}

/** The data directory's position: its newest snapshot, and the journal segments from it on with their sizes. */
export async function storePosition(dir: string, snapshot: number | undefined): Promise<StorePosition> {
  const segments = (await listSegments(dir)).filter((n) => n >= (snapshot ?? 1));
  const journal = await Promise.all(segments.map(async (n): Promise<[number, number]> => [n, (await stat(join(dir, segmentName(n)))).size]));
  return { snapshot: snapshot ?? null, journal };
}

const samePosition = (a: StorePosition, b: StorePosition) => JSON.stringify(a) === JSON.stringify(b);

/**
 * Writes the image of `index`, which holds `quads` quads and reflects `position` (nothing may
 * change it meanwhile), with `attachment`, what the store reads from the index at start (the
 * revision metadata), as it stands: temp file, fsync, rename, fsync dir. Returns its size, or
 * why no image could be written.
 */
export async function writeIndexImage(
  dir: string,
  index: OxigraphIndex,
  quads: number,
  position: StorePosition,
  attachment: Buffer,
): Promise<{ bytes: number } | { refused: string }> {
  const { bindings, storePointer } = index.memory;
  const held = heldValues(bindings);
  if (typeof held === 'string') return { refused: held };
  const memory = new Uint8Array(bindings.allocator.memory.buffer);
  const header: Omit<ImageHeader, 'chunks' | 'crc'> = { wasm: wasmDigest(), storePointer, memoryBytes: memory.length, held, quads, position, attachmentBytes: attachment.length };
  // The chunks flags add one character per 4 MiB: the header never comes near its size.
  if (JSON.stringify(header).length + memory.length / CHUNK_BYTES + 1000 > HEADER_BYTES) return { refused: 'its header would not fit' };
  await writeFileDurably(dir, IMAGE_FILE, async (file) => {
    let crc = 0;
    let chunks = '';
    for (let at = 0; at < memory.length; at += CHUNK_BYTES) {
      const chunk = memory.subarray(at, Math.min(memory.length, at + CHUNK_BYTES));
      const zero = isZero(chunk);
      chunks += zero ? '0' : '1';
      if (zero) continue;
      crc = crc32(chunk, crc);
      await file.write(chunk, 0, chunk.length, HEADER_BYTES + at);
    }
    await file.truncate(HEADER_BYTES + memory.length);
    crc = crc32(attachment, crc);
    await file.write(attachment, 0, attachment.length, HEADER_BYTES + memory.length);
    crc = crc32(headerText({ ...header, chunks }), crc);
    await file.write((MAGIC + JSON.stringify({ ...header, chunks, crc }) + '\n').padEnd(HEADER_BYTES, ' '), 0);
  });
  return { bytes: HEADER_BYTES + memory.length + attachment.length };
}

/** The header's fields as the checksum covers them, in a fixed order. */
function headerText(header: Omit<ImageHeader, 'crc'>): string {
  const { wasm, storePointer, memoryBytes, held, quads, position, chunks, attachmentBytes } = header;
  return JSON.stringify([wasm, storePointer, memoryBytes, held, quads, position, chunks, attachmentBytes]);
}

const ZEROS = new Uint8Array(CHUNK_BYTES);
const isZero = (chunk: Uint8Array) => Buffer.compare(chunk, ZEROS.subarray(0, chunk.length)) === 0;

/**
 * Reads the image in `dir`, if there is one: an index restored from it when it matches (same WASM
 * code, same `position`, complete and undamaged), else undefined with a log line saying why. The
 * file stays: the start removes it (removeIndexImage) once it has recovered, before it writes.
 */
export async function readIndexImage(
  dir: string,
  position: StorePosition,
  log: (message: string) => void,
): Promise<{ index: OxigraphIndex; quads: number; attachment: Buffer } | undefined> {
  const path = join(dir, IMAGE_FILE);
  let file;
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
    if (!samePosition(header.position, position)) return refused('the snapshot or journal changed since it was written');
    if ((await file.stat()).size !== HEADER_BYTES + header.memoryBytes + header.attachmentBytes || header.chunks.length !== Math.ceil(header.memoryBytes / CHUNK_BYTES)) return refused('its size does not match its header');
    const bindings = bindingsForImage(header.memoryBytes, header.held);
    const memory = new Uint8Array(bindings.allocator.memory.buffer);
    let crc = 0;
    const written = [...header.chunks].flatMap((c, i) => (c === '1' ? [i * CHUNK_BYTES] : []));
    const read = (at: number) => file.read(memory, at, Math.min(CHUNK_BYTES, memory.length - at), HEADER_BYTES + at);
    // The disk reads the next chunk while this one's checksum is taken.
    let next = written.length > 0 ? read(written[0]) : undefined;
    for (let i = 0; next; i++) {
      const at = written[i];
      const { bytesRead: got } = await next;
      if (got !== Math.min(CHUNK_BYTES, memory.length - at)) return refused('cut short');
      next = i + 1 < written.length ? read(written[i + 1]) : undefined;
      crc = crc32(memory.subarray(at, at + got), crc);
    }
    const attachment = Buffer.alloc(header.attachmentBytes);
    if ((await file.read(attachment, 0, attachment.length, HEADER_BYTES + header.memoryBytes)).bytesRead !== attachment.length) return refused('cut short');
    crc = crc32(attachment, crc);
    const { crc: expected, ...checked } = header;
    if (crc32(headerText(checked), crc) !== expected) return refused('damaged: checksum mismatch');
    const index = new OxigraphIndex(0, bindings, header.storePointer);
    log(`memory image of ${header.quads} quads (${Math.round(header.memoryBytes / 2 ** 20)} MiB) read in ${Math.round(performance.now() - started)} ms`);
    return { index, quads: header.quads, attachment };
  } catch (err) {
    log(`memory image ${IMAGE_FILE} not used (${(err as Error).message}): the store loads its snapshot`);
    return undefined;
  } finally {
    await file.close();
  }
}

/** Removes the image (and the temp file of one never finished), durably. */
export async function removeIndexImage(dir: string): Promise<void> {
  let removed = false;
  for (const name of [IMAGE_FILE, `${IMAGE_FILE}.tmp`]) {
    removed = (await rm(join(dir, name)).then(() => true, () => false)) || removed;
  }
  if (removed) await syncDirectory(dir);
}
