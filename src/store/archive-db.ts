import type { Database, Key } from 'lmdb';

/**
 * One LMDB database of the archive whose writes are readable at once: LMDB commits them in the
 * background, and until it has, they are read from memory. A write that fails is remembered, so
 * that the archive refuses to be called flushed.
 */
export class ArchiveDb<K extends Key, V> {
  private readonly pending = new Map<string, { key: K; value: V }>();

  constructor(
    private readonly db: Database<V, K>,
    private readonly failed: (err: Error) => void,
  ) {}

  get(key: K): V | undefined {
    return this.pending.get(JSON.stringify(key))?.value ?? this.db.get(key);
  }

  /** Whether `key` is there, without reading (or decompressing) its value. */
  has(key: K): boolean {
    return this.pending.has(JSON.stringify(key)) || this.db.doesExist(key);
  }

  put(key: K, value: V): void {
    const id = JSON.stringify(key);
    const entry = { key, value };
    this.pending.set(id, entry);
    this.db.put(key, value).then(
      () => {
        // Reads see the commit from now on.
        this.db.resetReadTxn();
        if (this.pending.get(id) === entry) this.pending.delete(id);
      },
      (err: Error) => this.failed(err),
    );
  }

  /** Entries from `start` (inclusive) to `end` (exclusive), committed or not (`within` tells which pending keys are in that range); all when both are absent. */
  range(start: K | undefined, end: K | undefined, within: (key: K) => boolean): { key: K; value: V }[] {
    const found = new Map<string, { key: K; value: V }>();
    for (const { key, value } of this.db.getRange({ ...(start !== undefined && { start }), ...(end !== undefined && { end }) })) found.set(JSON.stringify(key), { key, value });
    for (const [id, entry] of this.pending) if (within(entry.key)) found.set(id, entry);
    return [...found.values()];
  }

  /** Every key, committed or not, without reading the values. */
  keys(): K[] {
    const found = new Map<string, K>();
    for (const key of this.db.getKeys()) found.set(JSON.stringify(key), key);
    for (const [id, entry] of this.pending) found.set(id, entry.key);
    return [...found.values()];
  }

  /** Every committed entry in key order (for exports, with nothing written meanwhile). */
  all(): Iterable<{ key: K; value: V }> {
    return this.db.getRange();
  }
}

export class ArchiveCorruptError extends Error {}
