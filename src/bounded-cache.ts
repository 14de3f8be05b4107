/**
 * A map that holds at most `capacity` entries and, when full, forgets the entry set longest
 * ago (first in, first out). For values that never go stale (immutable revisions, events,
 * serialised bodies, verified tokens until they expire): a hit is a plain Map lookup.
 */
export class BoundedCache<K, V> {
  private readonly entries = new Map<K, V>();

  constructor(readonly capacity: number) {}

  get size(): number {
    return this.entries.size;
  }

  get(key: K): V | undefined {
    return this.entries.get(key);
  }

  set(key: K, value: V): void {
    if (!this.entries.has(key) && this.entries.size >= this.capacity) this.entries.delete(this.entries.keys().next().value as K);
    this.entries.set(key, value);
  }

  delete(key: K): void {
    this.entries.delete(key);
  }
}
