import { compareKeys, type Database, type Key } from 'lmdb';

/**
 * How long a written entry waits to go to LMDB with the others written meanwhile: each transaction has
 * a fixed cost on the request thread and rewrites the B-tree pages on the path to each key, so entries
 * sharing one share that cost. The journal makes a write durable, and entries stay readable from memory.
 */
const WRITE_DELAY_MS = 200;

/**
 * Entries that go to LMDB at once, without waiting for the delay: a burst's memory and the scans of pending entries
 * stay bounded.
 */
export const MAX_UNWRITTEN = 5_000;

/** What a pending entry holds when its key was removed. */
const REMOVED: unique symbol = Symbol('removed');

/**
 * One LMDB database of the archive whose writes are readable at once: they are handed to LMDB
 * together after a short delay (at once from `MAX_UNWRITTEN` entries on, or when `write()` is
 * called) and committed in the background, and until then they are read from memory. A write that
 * fails is remembered, so that the archive refuses to be called flushed.
 */
export class ArchiveDb<K extends Key, V> {
  private readonly pending = new Map<string, { key: K; value: V | typeof REMOVED }>();
  /** Entries put (or removed) since the last hand-over to LMDB. */
  private unwritten: [id: string, entry: { key: K; value: V | typeof REMOVED }][] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly db: Database<V, K>,
    private readonly failed: (err: Error) => void,
  ) {}

  get(key: K): V | undefined {
    const entry = this.pending.get(JSON.stringify(key));
    if (entry) return entry.value === REMOVED ? undefined : entry.value;
    return this.db.get(key);
  }

  /** Whether `key` is there, without reading (or decompressing) its value. */
  has(key: K): boolean {
    const entry = this.pending.get(JSON.stringify(key));
    return entry ? entry.value !== REMOVED : this.db.doesExist(key);
  }

  put(key: K, value: V): void {
    this.change(key, value);
  }

  /** Removes `key` (gone for readers at once, from LMDB with the next hand-over). */
  remove(key: K): void {
    this.change(key, REMOVED);
  }

  private change(key: K, value: V | typeof REMOVED): void {
    const id = JSON.stringify(key);
    const entry: { key: K; value: V | typeof REMOVED } = { key, value };
    this.pending.set(id, entry);
    this.unwritten.push([id, entry]);
    if (this.unwritten.length >= MAX_UNWRITTEN) this.write();
    else this.timer ??= setTimeout(() => this.write(), WRITE_DELAY_MS);
  }

  /** Hands every entry put so far to LMDB, as one write batch; `flushed` on the environment then covers them. */
  write(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.unwritten;
    if (batch.length === 0) return;
    this.unwritten = [];
    const commits = new Set<Promise<boolean>>();
    try {
      for (const [, { key, value }] of batch)
        commits.add(value === REMOVED ? this.db.remove(key) : this.db.put(key, value));
    } catch (err) {
      // A value LMDB cannot take (a key past its size limit): the journal still has it.
      this.failed(err as Error);
      return;
    }
    // One event turn's puts are one transaction (one promise), or several where they fill LMDB's write buffer: a
    // failed commit rejects each, and one left unheard would end the process. So would the promise each also carries,
    // rejected with LMDB's own error (which lmdb-js logs).
    const heard = [...commits].map((commit) =>
      commit.catch((err: Error & { commitError?: Promise<unknown> }) => {
        err.commitError?.catch(() => {});
        throw err;
      }),
    );
    Promise.all(heard).then(
      () => {
        // Reads see the commit from now on.
        this.db.resetReadTxn();
        for (const [id, entry] of batch) if (this.pending.get(id) === entry) this.pending.delete(id);
      },
      (err: Error) => this.failed(err),
    );
  }

  /**
   * Entries from `start` (inclusive) to `end` (exclusive), committed or not (`within` tells which pending keys are in
   * that range), in key order; all when both are absent. Those not yet committed are merged in as LMDB's are read.
   */
  range(start: K | undefined, end: K | undefined, within: (key: K) => boolean): { key: K; value: V }[] {
    const pending = [...this.pending.values()].filter((e) => within(e.key)).sort((a, b) => compareKeys(a.key, b.key));
    const found: { key: K; value: V }[] = [];
    let next = 0;
    const takePendingUpTo = (key: K | undefined) => {
      for (; next < pending.length && (key === undefined || compareKeys(pending[next].key, key) <= 0); next++) {
        const { key: at, value } = pending[next];
        if (value !== REMOVED) found.push({ key: at, value });
      }
    };
    for (const { key, value } of this.db.getRange({
      ...(start !== undefined && { start }),
      ...(end !== undefined && { end }),
    })) {
      takePendingUpTo(key);
      // A key written again, or removed, since it was committed: the pending entry stands for it.
      if (pending.length === 0 || !this.pending.has(JSON.stringify(key))) found.push({ key, value });
    }
    takePendingUpTo(undefined);
    return found;
  }

  /**
   * The keys from `start` (inclusive) to `end` (exclusive), committed or not, without reading the values: committed
   * ones in key order, then those not yet committed.
   */
  keysIn(start: K | undefined, end: K | undefined, within: (key: K) => boolean): K[] {
    const pending = [...this.pending].filter(([, entry]) => within(entry.key));
    const ids = new Set(pending.map(([id]) => id));
    const keys: K[] = [];
    for (const key of this.db.getKeys({ ...(start !== undefined && { start }), ...(end !== undefined && { end }) }))
      if (ids.size === 0 || !ids.has(JSON.stringify(key))) keys.push(key);
    for (const [, entry] of pending) if (entry.value !== REMOVED) keys.push(entry.key);
    return keys;
  }

  /**
   * The highest key below `below` and at or above `floor`, committed or not, in LMDB's key order:
   * one step of a walk down a range that reads one key per step, however long the range.
   */
  keyBelow(below: K, floor: K): K | undefined {
    let found: K | undefined;
    for (const key of this.db.getKeys({ start: below, end: floor, reverse: true })) {
      if (compareKeys(key, below) >= 0 || this.pending.get(JSON.stringify(key))?.value === REMOVED) continue;
      found = key;
      break;
    }
    for (const { key, value } of this.pending.values()) {
      if (value === REMOVED || compareKeys(key, below) >= 0 || compareKeys(key, floor) < 0) continue;
      if (found === undefined || compareKeys(key, found) > 0) found = key;
    }
    return found;
  }

  /** The highest key, committed or not (keys compared as JavaScript values: numbers or strings). */
  lastKey(): K | undefined {
    let last: K | undefined;
    for (const key of this.db.getKeys({ reverse: true, limit: 1 })) last = key;
    for (const { key, value } of this.pending.values())
      if (value !== REMOVED && (last === undefined || (key as number | string) > (last as number | string))) last = key;
    return last;
  }

  /** Every key, committed or not, without reading the values. */
  keys(): K[] {
    const found = new Map<string, K>();
    for (const key of this.db.getKeys()) found.set(JSON.stringify(key), key);
    for (const [id, entry] of this.pending) {
      if (entry.value === REMOVED) found.delete(id);
      else found.set(id, entry.key);
    }
    return [...found.values()];
  }

  /** Every committed entry in key order (for exports, with nothing written meanwhile). */
  all(): Iterable<{ key: K; value: V }> {
    return this.db.getRange();
  }
}

export class ArchiveCorruptError extends Error {}
