import { open, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { writeFileDurably } from '../journal/journal.js';
import type { OxigraphIndex } from '../oxigraph/oxigraph-index.js';

const SNAPSHOT_PATTERN = /^snapshot-(\d{8})\.nq$/;
/** The last line of a complete snapshot, with the CRC-32 of every byte before it. */
const END_PREFIX = '# end of snapshot, crc32 ';
const END_LINE = /^# end of snapshot, crc32 ([0-9a-f]{8})\n$/;
const endLine = (crc: number) => `${END_PREFIX}${crc.toString(16).padStart(8, '0')}\n`;
const LOAD_CHUNK_BYTES = 4 * 1024 * 1024;
/** Large files written while the server serves are synced every this many bytes (see writeSnapshotFile). */
export const SYNC_EVERY_BYTES = 32 * 1024 * 1024;

export const snapshotName = (segment: number) => `snapshot-${String(segment).padStart(8, '0')}.nq`;

export class SnapshotCorruptError extends Error {}

const corruptSnapshot = (segment: number, why: string) =>
  new SnapshotCorruptError(
    `snapshot ${snapshotName(segment)} ${why}; refusing to start. Restore the data directory from a backup.`,
  );

/**
 * The newest snapshot: it holds everything written before journal segment `segment`, so
 * startup loads it and replays segments from `segment` on.
 */
export async function latestSnapshot(dir: string): Promise<number | undefined> {
  const numbers = (await readdir(dir))
    .map((n) => SNAPSHOT_PATTERN.exec(n))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => Number(m[1]))
    .sort((a, b) => b - a);
  return numbers[0];
}

/** Where the end line starts in `body` (cut at a line end), or -1. */
function endLineAt(body: Buffer): number {
  if (body.toString('latin1', 0, END_PREFIX.length) === END_PREFIX) return 0;
  const at = body.indexOf(`\n${END_PREFIX}`);
  return at < 0 ? -1 : at + 1;
}

/**
 * Reads a snapshot in chunks of bytes cut at line ends (never as one giant string) and hands each
 * to `onBody`, the end line left out. Refuses a file whose end line is missing (incomplete) or
 * whose checksum does not match; as that is known only at the end, `onBody` has seen the data by then.
 */
export async function readSnapshot(dir: string, segment: number, onBody: (body: Buffer) => unknown): Promise<void> {
  const name = snapshotName(segment);
  const refuse = (why: string) => corruptSnapshot(segment, why);
  const file = await open(join(dir, name), 'r');
  const read = async () => {
    const chunk = Buffer.allocUnsafe(LOAD_CHUNK_BYTES);
    return chunk.subarray(0, (await file.read(chunk, 0, LOAD_CHUNK_BYTES, null)).bytesRead);
  };
  let next = read();
  try {
    let carry = Buffer.alloc(0);
    let crc = 0;
    let expectedCrc: string | undefined;
    for (let chunk = await next; chunk.length > 0; chunk = await next) {
      next = read(); // the disk reads the next chunk while this one is used
      const data = carry.length > 0 ? Buffer.concat([carry, chunk]) : chunk;
      const cut = data.lastIndexOf(0x0a) + 1;
      carry = data.subarray(cut);
      if (cut === 0) continue;
      if (expectedCrc !== undefined) throw refuse('has a damaged end line or data after it');
      let body = data.subarray(0, cut);
      const endAt = endLineAt(body);
      if (endAt >= 0) {
        const end = END_LINE.exec(body.toString('latin1', endAt));
        if (!end) throw refuse('has a damaged end line or data after it');
        expectedCrc = end[1];
        body = body.subarray(0, endAt);
      }
      crc = crc32(body, crc);
      await onBody(body);
    }
    if (expectedCrc === undefined || carry.length > 0) throw refuse('is incomplete (no end line)');
    if (expectedCrc !== crc.toString(16).padStart(8, '0')) throw refuse('is corrupt (checksum mismatch)');
  } finally {
    await next.catch(() => {}); // a read still in flight when a check failed
    await file.close();
  }
}

/**
 * Streams a snapshot into the store (see readSnapshot). `makeRoom` is told each chunk's size
 * before it is loaded (it throws to stop the load).
 */
export async function loadSnapshot(
  index: OxigraphIndex,
  dir: string,
  segment: number,
  makeRoom: (bytes: number) => void,
): Promise<void> {
  await readSnapshot(dir, segment, (body) => {
    makeRoom(body.length);
    try {
      index.loadTrusted(body);
    } catch (err) {
      if (err instanceof WebAssembly.RuntimeError) throw err; // Oxigraph itself failed (out of memory), not the file
      throw corruptSnapshot(segment, `is corrupt (${(err as Error).message})`);
    }
  });
}

/**
 * Writes `snapshot-<segment>.nq` from what `produce` hands to `write` (N-Quads text or bytes,
 * whole lines): temp file, end line with the CRC, fsync, rename, fsync dir. Nothing is left
 * behind if `produce` fails.
 */
export async function writeSnapshotFile(
  dir: string,
  segment: number,
  produce: (write: (data: string | Buffer) => Promise<void>) => Promise<void>,
): Promise<void> {
  await writeFileDurably(dir, snapshotName(segment), async (file) => {
    let crc = 0;
    let unsynced = 0;
    await produce(async (data) => {
      crc = crc32(data, crc);
      if (typeof data === 'string') await file.write(data);
      else await file.write(data);
      // Synced as it goes: one fsync of a whole large file at the end would hold the disk (and the
      // journal's fdatasync behind it) for seconds.
      unsynced += data.length;
      if (unsynced >= SYNC_EVERY_BYTES) {
        await file.datasync();
        unsynced = 0;
      }
    });
    await file.write(endLine(crc));
  });
}

/** Removes snapshots older than `segment` and temp files of snapshots that never finished. */
export async function removeSnapshotsBefore(dir: string, segment: number): Promise<void> {
  for (const name of await readdir(dir)) {
    const m = SNAPSHOT_PATTERN.exec(name);
    if ((m && Number(m[1]) < segment) || name.endsWith('.nq.tmp')) await rm(join(dir, name));
  }
}
