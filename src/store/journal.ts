import { open, readdir, readFile, rm, stat, truncate, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';

/**
 * What a record asks the store to do. `load` is N-Quads text to insert; `update` is a
 * SPARQL Update made only of DELETE DATA / INSERT DATA blocks. Both are idempotent per quad,
 * which is what lets a snapshot be taken while writes go on (see snapshot.ts).
 */
export interface JournalRecord {
  kind: 'load' | 'update';
  text: string;
}

const HEADER_BYTES = 9; // u32 payload length, u32 CRC-32 of kind+payload, u8 kind
const KIND_CODES = { load: 1, update: 2 } as const;
const KIND_BY_CODE: Record<number, JournalRecord['kind']> = { 1: 'load', 2: 'update' };
const SEGMENT_PATTERN = /^journal-(\d{8})\.log$/;

export const segmentName = (n: number) => `journal-${String(n).padStart(8, '0')}.log`;

export function encodeRecord(record: JournalRecord): Buffer {
  const payload = Buffer.from(record.text, 'utf8');
  const buf = Buffer.allocUnsafe(HEADER_BYTES + payload.length);
  buf.writeUInt32LE(payload.length, 0);
  buf.writeUInt8(KIND_CODES[record.kind], 8);
  payload.copy(buf, HEADER_BYTES);
  buf.writeUInt32LE(crc32(buf.subarray(8)), 4);
  return buf;
}

export class JournalCorruptError extends Error {}

export interface DecodedSegment {
  records: JournalRecord[];
  /** Byte length of the valid prefix; anything after it is a torn tail. */
  validBytes: number;
  tornTail: boolean;
}

/**
 * Decodes a segment. A bad record that reaches the end of the data is a torn write and is
 * dropped; a bad record followed by more data means the middle is corrupt, which is fatal.
 */
export function decodeSegment(data: Buffer, name: string): DecodedSegment {
  const records: JournalRecord[] = [];
  let offset = 0;
  while (offset < data.length) {
    const remaining = data.length - offset;
    const length = remaining >= 4 ? data.readUInt32LE(offset) : Infinity;
    const end = offset + HEADER_BYTES + length;
    const intact =
      remaining >= HEADER_BYTES &&
      end <= data.length &&
      KIND_BY_CODE[data.readUInt8(offset + 8)] !== undefined &&
      crc32(data.subarray(offset + 8, end)) === data.readUInt32LE(offset + 4);
    if (!intact) {
      if (end >= data.length) return { records, validBytes: offset, tornTail: true };
      throw new JournalCorruptError(
        `journal ${name} is corrupt at byte ${offset} (bad record followed by ${data.length - end} more bytes); ` +
          'refusing to start. Restore the data directory from a backup or remove the damaged segment deliberately.',
      );
    }
    records.push({ kind: KIND_BY_CODE[data.readUInt8(offset + 8)], text: data.toString('utf8', offset + HEADER_BYTES, end) });
    offset = end;
  }
  return { records, validBytes: offset, tornTail: false };
}

export async function listSegments(dir: string): Promise<number[]> {
  const names = await readdir(dir);
  return names
    .map((n) => SEGMENT_PATTERN.exec(n))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => Number(m[1]))
    .sort((a, b) => a - b);
}

/** Reads a segment for replay, cutting a torn tail off the file so appends continue cleanly. */
export async function readSegment(dir: string, n: number, log: (msg: string) => void): Promise<JournalRecord[]> {
  const path = join(dir, segmentName(n));
  const decoded = decodeSegment(await readFile(path), segmentName(n));
  if (decoded.tornTail) {
    const size = (await stat(path)).size;
    log(`journal ${segmentName(n)}: dropped a torn last record (${size - decoded.validBytes} bytes)`);
    await truncate(path, decoded.validBytes);
  }
  return decoded.records;
}

interface Pending {
  bytes: Buffer;
  resolve: () => void;
  reject: (err: Error) => void;
  apply: () => void;
}

export class JournalUnavailableError extends Error {}

/**
 * Append-only, group-committed log. Records queued while a flush runs go out together in the
 * next write + fdatasync. `apply` callbacks run in log order right after their record is on disk,
 * before the next flush starts, so the in-memory store never runs ahead of the disk.
 */
export class Journal {
  private queue: Pending[] = [];
  private flushing = false;
  private file!: FileHandle;
  private size = 0;
  private failed: Error | undefined;
  private idleWaiters: (() => void)[] = [];
  private rotationWaiters: ((segment: number) => void)[] = [];

  private constructor(
    private readonly dir: string,
    private segment: number,
    private readonly fsync: boolean,
    private readonly onSizeExceeded: () => void,
    private readonly snapshotAfterBytes: number,
  ) {}

  static async open(opts: { dir: string; segment: number; fsync: boolean; snapshotAfterBytes: number; onSizeExceeded: () => void }): Promise<Journal> {
    const journal = new Journal(opts.dir, opts.segment, opts.fsync, opts.onSizeExceeded, opts.snapshotAfterBytes);
    await journal.openSegment();
    return journal;
  }

  get currentSegment(): number {
    return this.segment;
  }

  get bytes(): number {
    return this.size;
  }

  private async openSegment(): Promise<void> {
    this.file = await open(join(this.dir, segmentName(this.segment)), 'a');
    this.size = (await this.file.stat()).size;
  }

  /** Queues a record; resolves once it is durable and `apply` has run. */
  append(record: JournalRecord, apply: () => void): Promise<void> {
    if (this.failed) return Promise.reject(new JournalUnavailableError(`journal unavailable: ${this.failed.message}`));
    return new Promise((resolve, reject) => {
      this.queue.push({ bytes: encodeRecord(record), resolve, reject, apply });
      if (!this.flushing) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.flushing = true;
    while (this.queue.length > 0 || this.rotationWaiters.length > 0) {
      if (this.rotationWaiters.length > 0) {
        await this.file.close();
        this.segment += 1;
        await this.openSegment();
        for (const wake of this.rotationWaiters.splice(0)) wake(this.segment);
        continue;
      }
      await this.writeBatch(this.queue.splice(0));
    }
    this.flushing = false;
    for (const wake of this.idleWaiters.splice(0)) wake();
  }

  private async writeBatch(batch: Pending[]): Promise<void> {
    const before = this.size;
    try {
      const data = batch.length === 1 ? batch[0].bytes : Buffer.concat(batch.map((p) => p.bytes));
      let written = 0;
      while (written < data.length) written += (await this.file.write(data, written)).bytesWritten;
      if (this.fsync) await this.file.datasync();
      this.size += data.length;
    } catch (err) {
      await this.recoverFromWriteError(before, err as Error);
      for (const p of batch) p.reject(new JournalUnavailableError(`journal write failed: ${(err as Error).message}`));
      return;
    }
    for (const p of batch) {
      try {
        p.apply();
        p.resolve();
      } catch (err) {
        p.reject(err as Error);
      }
    }
    if (this.size > this.snapshotAfterBytes) this.onSizeExceeded();
  }

  /** Cuts off whatever part of a failed batch reached the file, so later appends stay readable. */
  private async recoverFromWriteError(goodSize: number, err: Error): Promise<void> {
    try {
      await this.file.truncate(goodSize);
      await this.file.datasync();
    } catch (truncateErr) {
      this.failed = new Error(`${err.message}; and could not truncate: ${(truncateErr as Error).message}`);
    }
  }

  /** Resolves when no flush is running and nothing is queued. */
  idle(): Promise<void> {
    if (!this.flushing && this.queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Starts a new segment; every record of earlier segments is applied when this resolves. */
  rotate(): Promise<number> {
    return new Promise((resolve) => {
      this.rotationWaiters.push(resolve);
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

