/**
 * A map that holds at most `capacity` entries and, when full, forgets the entry set longest
 * ago (first in, first out). For values that never go stale (immutable revisions, events,
 * serialised bodies, verified tokens until they expire): a hit is a plain Map lookup. With
 * `weigh`, `capacity` bounds the sum of the entries' weights instead of their number (values
 * whose size varies a lot).
 */
export class BoundedCache<K, V> {
  private readonly entries = new Map<K, V>();
  private weight = 0;

  constructor(
    readonly capacity: number,
    private readonly weigh: (value: V) => number = () => 1,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  get(key: K): V | undefined {
    return this.entries.get(key);
  }

  set(key: K, value: V): void {
    const old = this.entries.get(key);
    if (old !== undefined || this.entries.has(key)) this.weight -= this.weigh(old as V);
    this.weight += this.weigh(value);
    this.entries.set(key, value);
    while (this.weight > this.capacity && this.entries.size > 1) this.delete(this.entries.keys().next().value as K);
  }

  delete(key: K): void {
    const value = this.entries.get(key);
    if (value === undefined && !this.entries.has(key)) return;
    this.weight -= this.weigh(value as V);
    this.entries.delete(key);
  }
}
