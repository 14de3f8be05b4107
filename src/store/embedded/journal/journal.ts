import { open, readdir, rename, rm, stat, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import type { CommitBytes, CommitRecord } from '../../commit-record.js';
import { StoreUnavailableError } from '../../errors.js';

/**
 * Record layout, little endian: u32 payload length, u32 length of the delete part, u32 CRC-32
 * of the payload, u32 CRC-32 of the 12 header bytes before it; then the payload (delete N-Quads
 * followed by insert N-Quads, UTF-8). The header has its own CRC so a damaged length can never
 * pass for a record that runs past the end of the file.
 */
const HEADER_BYTES = 16;
const SEGMENT_PATTERN = /^journal-(\d{8})\.log$/;

export const segmentName = (n: number) => `journal-${String(n).padStart(8, '0')}.log`;

export function encodeRecord(record: CommitRecord): Buffer {
  const deleteBytes = Buffer.byteLength(record.delete, 'utf8');
  const payloadBytes = deleteBytes + Buffer.byteLength(record.insert, 'utf8');
  const buf = Buffer.allocUnsafe(HEADER_BYTES + payloadBytes);
  buf.write(record.delete, HEADER_BYTES, 'utf8');
  buf.write(record.insert, HEADER_BYTES + deleteBytes, 'utf8');
  buf.writeUInt32LE(payloadBytes, 0);
  buf.writeUInt32LE(deleteBytes, 4);
  buf.writeUInt32LE(crc32(buf.subarray(HEADER_BYTES)), 8);
  buf.writeUInt32LE(crc32(buf.subarray(0, 12)), 12);
  return buf;
}

export class JournalCorruptError extends Error {}

export interface SegmentScan {
  size: number;
  /** Byte length of the valid prefix; anything after it is a damaged last record. */
  validBytes: number;
  /** Why the bytes after `validBytes` are to be dropped, if there are any. */
  damagedTail?: string;
}

const READ_CHUNK_BYTES = 8 * 1024 * 1024;
/** Records are handed over in batches of about this many payload bytes. */
const SCAN_BATCH_BYTES = 4 * 1024 * 1024;

/** Reads a file forward in chunks, so a segment is never held whole in memory. */
class ForwardReader {
  private buffer = Buffer.alloc(0);
  /** File offset of buffer[0]. */
  private start = 0;

  constructor(
    private readonly file: FileHandle,
    readonly size: number,
  ) {}

  /** Bytes [from, to) of the file; `from` never goes back before an earlier call's `from`. */
  async bytes(from: number, to: number): Promise<Buffer> {
    if (to > this.start + this.buffer.length) {
      const kept = this.buffer.subarray(Math.min(from - this.start, this.buffer.length));
      const next = Buffer.allocUnsafe(Math.min(this.size - from, Math.max(to - from, READ_CHUNK_BYTES)));
      kept.copy(next);
      for (let filled = kept.length; filled < next.length; ) {
        const { bytesRead } = await this.file.read(next, filled, next.length - filled, from + filled);
        if (bytesRead === 0) throw new Error(`file shrank while being read (at byte ${from + filled})`);
        filled += bytesRead;
      }
      this.buffer = next;
      this.start = from;
    }
    return this.buffer.subarray(from - this.start, to - this.start);
  }

  async onlyZerosFrom(offset: number): Promise<boolean> {
    for (let at = offset; at < this.size; at += READ_CHUNK_BYTES) {
      if (!(await this.bytes(at, Math.min(this.size, at + READ_CHUNK_BYTES))).every((b) => b === 0)) return false;
    }
    return true;
  }
}

/**
 * Reads a segment and hands its records, in order and in batches, to `onRecords`. A damaged
 * record is dropped when it is the last thing in the file: cut short (a write torn by a crash),
 * failing its CRC at the very end, or followed only by zero bytes (a file extended by a power
 * cut before its data reached the disk). Damage followed by anything else means the middle of
 * the journal is corrupt, which is fatal: dropping it would silently lose acknowledged writes.
 */
export async function scanSegment(
  path: string,
  name: string,
  onRecords: (records: CommitBytes[]) => unknown,
): Promise<SegmentScan> {
  const file = await open(path, 'r');
  try {
    const reader = new ForwardReader(file, (await file.stat()).size);
    const { size } = reader;
    let offset = 0;
    let batch: CommitBytes[] = [];
    let batchBytes = 0;
    const flush = async () => {
      if (batch.length > 0) await onRecords(batch);
      batch = [];
      batchBytes = 0;
    };
    const end = async (damagedTail?: string): Promise<SegmentScan> => {
      await flush();
      return { size, validBytes: offset, damagedTail };
    };
    const corrupt = (what: string) =>
      new JournalCorruptError(
        `journal ${name} is corrupt at byte ${offset}: ${what}, and more data follows (${size - offset} bytes to the ` +
          `end of the file), so it is not a torn last write. ` +
          'Refusing to start: restore the data directory from a backup, or truncate the segment at that byte ' +
          'deliberately, accepting the loss of what follows.',
      );
    while (offset < size) {
      if (size - offset < HEADER_BYTES) return await end('a record header cut short');
      const header = await reader.bytes(offset, offset + HEADER_BYTES);
      if (crc32(header.subarray(0, 12)) !== header.readUInt32LE(12)) {
        if (await reader.onlyZerosFrom(offset)) return await end('zero bytes where a record should be');
        throw corrupt('a record header fails its checksum');
      }
      const payloadBytes = header.readUInt32LE(0);
      const deleteBytes = header.readUInt32LE(4);
      const payloadCrc = header.readUInt32LE(8);
      const recordEnd = offset + HEADER_BYTES + payloadBytes;
      if (recordEnd > size) return await end('a record cut short');
      if (deleteBytes > payloadBytes) throw corrupt('a record header with impossible lengths');
      const payload = await reader.bytes(offset + HEADER_BYTES, recordEnd);
      if (crc32(payload) !== payloadCrc) {
        if (await reader.onlyZerosFrom(recordEnd)) return await end('a last record that fails its checksum');
        throw corrupt('a record fails its checksum');
      }
      batch.push({ delete: payload.subarray(0, deleteBytes), insert: payload.subarray(deleteBytes) });
      batchBytes += payloadBytes;
      offset = recordEnd;
      if (batchBytes >= SCAN_BATCH_BYTES) await flush();
    }
    return await end();
  } finally {
    await file.close();
  }
}

export async function listSegments(dir: string): Promise<number[]> {
  const names = await readdir(dir);
  return names
    .map((n) => SEGMENT_PATTERN.exec(n))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => Number(m[1]))
    .sort((a, b) => a - b);
}

/**
 * Writes file `name` in `dir` whole or not at all: `write` fills a temp file, which is then
 * fsync'ed and renamed over `name`, and the directory fsync'ed. Nothing is left behind if `write` fails.
 */
export async function writeFileDurably(
  dir: string,
  name: string,
  write: (file: FileHandle) => Promise<void>,
): Promise<void> {
  const finalPath = join(dir, name);
  const tempPath = `${finalPath}.tmp`;
  const file = await open(tempPath, 'w');
  try {
    await write(file);
    await file.sync();
  } catch (err) {
    await file.close();
    await rm(tempPath, { force: true });
    throw err;
  }
  await file.close();
  await rename(tempPath, finalPath);
  await syncDirectory(dir);
}

/** Makes creations, renames and removals of entries in `dir` durable. */
export async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Reads segments `from`, `from + 1`, ... (up to `to`, exclusive, or all) in order, without changing
 * them, and hands their records to `onRecords`. A damaged tail is allowed only in the last segment
 * that holds data (a torn last write); anywhere else it is corruption, and so is a missing segment.
 * Returns the segments read, how many records they held, and the damaged tail, if any.
 */
export async function readJournal(
  dir: string,
  range: { from: number; to?: number },
  onRecords: (records: CommitBytes[]) => unknown,
): Promise<{ segments: number[]; records: number; tail?: { segment: number; scan: SegmentScan } }> {
  const { from, to = Number.POSITIVE_INFINITY } = range;
  const segments = (await listSegments(dir)).filter((n) => n >= from && n < to);
  segments.forEach((n, i) => {
    if (n !== from + i) {
      throw new JournalCorruptError(
        `journal ${segmentName(from + i)} is missing (found ${segments.map(segmentName).join(', ')}); refusing to ` +
          `start without the writes it held`,
      );
    }
  });
  if (to !== Number.POSITIVE_INFINITY && segments.length !== to - from)
    throw new JournalCorruptError(`journal ${segmentName(from + segments.length)} is missing`);
  const sizes = await Promise.all(segments.map(async (n) => (await stat(join(dir, segmentName(n)))).size));
  let lastWithData = sizes.length - 1;
  while (lastWithData > 0 && sizes[lastWithData] === 0) lastWithData -= 1;
  let records = 0;
  let tail: { segment: number; scan: SegmentScan } | undefined;
  for (const [i, n] of segments.entries()) {
    const scan = await scanSegment(join(dir, segmentName(n)), segmentName(n), async (batch) => {
      await onRecords(batch);
      records += batch.length;
    });
    if (!scan.damagedTail) continue;
    if (i < lastWithData) {
      throw new JournalCorruptError(
        `journal ${segmentName(n)} ends in ${scan.damagedTail} at byte ${scan.validBytes}, but later segments hold ` +
          `records; refusing to start`,
      );
    }
    tail = { segment: n, scan };
  }
  return { segments, records, tail };
}

/**
 * Reads segments `from`, `from + 1`, ... in order and hands their records to `replay` (see
 * readJournal). A damaged tail of the last segment is cut off the file (with a log line) so
 * appends continue cleanly. Returns the segment to append to and how many records were replayed.
 */
export async function recoverJournal(
  dir: string,
  from: number,
  log: (message: string) => void,
  replay: (records: CommitBytes[]) => void,
): Promise<{ segment: number; records: number }> {
  const { segments, records, tail } = await readJournal(dir, { from }, replay);
  if (tail) {
    const { segment, scan } = tail;
    log(
      `journal ${segmentName(segment)}: dropped ${scan.damagedTail} (${scan.size - scan.validBytes} bytes from byte ` +
        `${scan.validBytes})`,
    );
    const file = await open(join(dir, segmentName(segment)), 'r+');
    try {
      await file.truncate(scan.validBytes);
      await file.sync();
    } finally {
      await file.close();
    }
  }
  return { segment: segments.at(-1) ?? from, records };
}

interface Pending {
  bytes: Buffer;
  resolve: () => void;
  reject: (err: Error) => void;
  apply: (stored: CommitBytes) => void;
}

/** The two parts of an encoded record, as views of its bytes. */
function storedParts(bytes: Buffer): CommitBytes {
  const payloadStart = HEADER_BYTES + bytes.readUInt32LE(4);
  return { delete: bytes.subarray(HEADER_BYTES, payloadStart), insert: bytes.subarray(payloadStart) };
}

/** Runs the apply callbacks of durable records, in order, and settles their appends. */
function applyAll(records: Pending[]): void {
  for (const p of records) {
    try {
      p.apply(storedParts(p.bytes));
      p.resolve();
    } catch (err) {
      p.reject(err as Error);
    }
  }
}

interface RotationWaiter {
  atRotation?: (segment: number) => void;
  resolve: (segment: number) => void;
  reject: (err: Error) => void;
}

/**
 * Append-only, group-committed log. Records queued while a flush runs go out together in the
 * next write + fdatasync. `apply` callbacks run in log order once their record is on disk (while
 * the next batch is written), so the in-memory store never runs ahead of the disk.
 */
export class Journal {
  private queue: Pending[] = [];
  private flushing = false;
  private file!: FileHandle;
  private size = 0;
  private failed: Error | undefined;
  private idleWaiters: (() => void)[] = [];
  private rotationWaiters: RotationWaiter[] = [];
  private writes = 0;

  private constructor(
    private readonly dir: string,
    private segment: number,
    private readonly fsync: boolean,
    private readonly onSizeExceeded: () => void,
    private readonly snapshotAfterBytes: number,
    private readonly onFlushed?: (seconds: number, records: number) => void,
  ) {}

  static async open(opts: {
    dir: string;
    segment: number;
    fsync: boolean;
    snapshotAfterBytes: number;
    onSizeExceeded: () => void;
    /** Called after each durable batch with the time its write + fdatasync took. */
    onFlushed?: (seconds: number, records: number) => void;
  }): Promise<Journal> {
    const journal = new Journal(
      opts.dir,
      opts.segment,
      opts.fsync,
      opts.onSizeExceeded,
      opts.snapshotAfterBytes,
      opts.onFlushed,
    );
    [journal.file, journal.size] = await journal.openSegment(opts.segment);
    return journal;
  }

  get bytes(): number {
    return this.size;
  }

  /** How many write + fdatasync rounds have run: fewer than records when commits are grouped. */
  get flushes(): number {
    return this.writes;
  }

  /** Opens (creating if needed) a segment for appending; the directory is synced so a new file survives a power cut. */
  private async openSegment(n: number): Promise<[FileHandle, number]> {
    const file = await open(join(this.dir, segmentName(n)), 'a');
    try {
      const { size } = await file.stat();
      if (this.fsync) await syncDirectory(this.dir);
      return [file, size];
    } catch (err) {
      await file.close();
      throw err;
    }
  }

  /**
   * Queues a record; resolves once it is durable and `apply` has run. `apply` gets the record as
   * written (UTF-8 bytes), which is what the store loads: encoding it once serves both.
   */
  append(record: CommitRecord, apply: (stored: CommitBytes) => void): Promise<void> {
    if (this.failed) return Promise.reject(this.unavailable());
    return new Promise((resolve, reject) => {
      this.queue.push({ bytes: encodeRecord(record), resolve, reject, apply });
      if (!this.flushing) void this.flush();
    });
  }

  private unavailable(): StoreUnavailableError {
    return new StoreUnavailableError(`journal unavailable until restart: ${this.failed?.message}`);
  }

  /**
   * Writes batch after batch. A batch's records are applied once it is on disk, while the next
   * batch is being written and synced: the CPU work of one overlaps the disk wait of the other,
   * and records still go to the store in log order, never before they are durable.
   */
  private async flush(): Promise<void> {
    this.flushing = true;
    let durable: Pending[] = [];
    for (;;) {
      while (this.queue.length > 0 || this.rotationWaiters.length > 0) {
        if (this.rotationWaiters.length > 0) {
          applyAll(durable);
          durable = [];
          await this.rotateNow(this.rotationWaiters.splice(0));
          continue;
        }
        const batch = this.queue.splice(0);
        const written = this.writeBatch(batch);
        applyAll(durable);
        durable = (await written) ? batch : [];
        if (this.size > this.snapshotAfterBytes) this.onSizeExceeded();
      }
      applyAll(durable);
      durable = [];
      // Applying publishes on the after-commit stream, whose consumers may append in turn.
      if (this.queue.length === 0 && this.rotationWaiters.length === 0) break;
    }
    this.flushing = false;
    for (const wake of this.idleWaiters.splice(0)) wake();
  }

  /** Switches to the next segment; if it cannot be opened, appends go on in the current one. */
  private async rotateNow(waiters: RotationWaiter[]): Promise<void> {
    let opened: [FileHandle, number];
    try {
      opened = await this.openSegment(this.segment + 1);
    } catch (err) {
      for (const w of waiters) w.reject(err as Error);
      return;
    }
    const previous = this.file;
    [this.file, this.size] = opened;
    this.segment += 1;
    // Not after a failed write that could not be cut off: the closed segment may end in records never applied.
    if (!this.failed) for (const w of waiters) w.atRotation?.(this.segment);
    await previous.close().catch(() => {}); // every byte in it is already synced
    for (const w of waiters) w.resolve(this.segment);
  }

  /** Writes and syncs a batch; false (every record rejected) when it could not be made durable. */
  private async writeBatch(batch: Pending[]): Promise<boolean> {
    if (this.failed) {
      // The file may end in a partial batch that could not be cut off: writing after it would
      // turn a droppable torn tail into corruption in the middle of the journal.
      for (const p of batch) p.reject(this.unavailable());
      return false;
    }
    const before = this.size;
    const started = this.onFlushed && process.hrtime.bigint();
    try {
      const data = batch.length === 1 ? batch[0].bytes : Buffer.concat(batch.map((p) => p.bytes));
      let written = 0;
      while (written < data.length) written += (await this.file.write(data, written)).bytesWritten;
      if (this.fsync) await this.file.datasync();
      this.size += data.length;
      this.writes += 1;
      if (started) this.onFlushed?.(Number(process.hrtime.bigint() - started) / 1e9, batch.length);
    } catch (err) {
      await this.cutBack(before, err as Error);
      for (const p of batch) p.reject(new StoreUnavailableError(`journal write failed: ${(err as Error).message}`));
      return false;
    }
    return true;
  }

  /** Cuts off whatever part of a failed batch reached the file, so later appends stay readable. */
  private async cutBack(goodSize: number, err: Error): Promise<void> {
    try {
      await this.file.truncate(goodSize);
      if (this.fsync) await this.file.datasync();
    } catch (truncateErr) {
      this.failed = new Error(
        `${err.message}; and could not cut the partial write off: ${(truncateErr as Error).message}`,
      );
    }
  }

  /** Resolves when no flush is running and nothing is queued. */
  idle(): Promise<void> {
    if (!this.flushing && this.queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * Starts a new segment, resolving with its number once every record of earlier segments is applied; on failure the
   * current segment stays in use. `atRotation` (must not throw) runs at the switch, when the store holds exactly what
   * a snapshot of the closed segments will, and is skipped if a failed write may have left records never applied
   * (docs/storage.md, "Memory image").
   */
  rotate(atRotation?: (segment: number) => void): Promise<number> {
    return new Promise((resolve, reject) => {
      this.rotationWaiters.push({ atRotation, resolve, reject });
      if (!this.flushing) void this.flush();
    });
  }

  async close(): Promise<void> {
    await this.idle();
    await this.file.close();
  }
}

export async function removeSegmentsBefore(dir: string, segment: number): Promise<void> {
  for (const n of await listSegments(dir)) if (n < segment) await rm(join(dir, segmentName(n)));
}
