/** An entry, linked to the one set before it and the one set after it. */
interface Entry<K, V> {
  key: K;
  value: V;
  older: Entry<K, V> | undefined;
  newer: Entry<K, V> | undefined;
}

/**
 * A map of at most `capacity` entries (with `weigh`, of that total weight) that forgets the entry set
 * longest ago, for values that never go stale: a hit is a plain Map lookup. The order is a list of its
 * own, since reaching the Map's oldest entry through its iterator is slow after deletions, and an
 * iterator kept between evictions pins every table the Map ever had.
 */
export class BoundedCache<K, V> {
  private readonly entries = new Map<K, Entry<K, V>>();
  private oldest: Entry<K, V> | undefined;
  private newest: Entry<K, V> | undefined;
  private weight = 0;

  constructor(
    readonly capacity: number,
    private readonly weigh: (value: V) => number = () => 1,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  get(key: K): V | undefined {
    return this.entries.get(key)?.value;
  }

  /** Sets `key`: a key held already keeps its place in the order, a new one goes last. */
  set(key: K, value: V): void {
    const held = this.entries.get(key);
    if (held) {
      this.weight += this.weigh(value) - this.weigh(held.value);
      held.value = value;
    } else {
      const entry: Entry<K, V> = { key, value, older: this.newest, newer: undefined };
      if (this.newest) this.newest.newer = entry;
      else this.oldest = entry;
      this.newest = entry;
      this.entries.set(key, entry);
      this.weight += this.weigh(value);
    }
    while (this.weight > this.capacity && this.entries.size > 1) this.delete(this.oldest!.key);
  }

  delete(key: K): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    this.weight -= this.weigh(entry.value);
    if (entry.older) entry.older.newer = entry.newer;
    else this.oldest = entry.newer;
    if (entry.newer) entry.newer.older = entry.older;
    else this.newest = entry.older;
  }
}
