/** An entry, linked to the one set before it and the one set after it. */
interface Entry<K, V> {
  key: K;
  value: V;
  /** Its weight when set: a value changed in place is weighed again when set again. */
  weight: number;
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
  private totalWeight = 0;

  constructor(
    readonly capacity: number,
    private readonly weigh: (value: V) => number = () => 1,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  /** The total weight of the entries held (their count without `weigh`). */
  get weight(): number {
    return this.totalWeight;
  }

  get(key: K): V | undefined {
    return this.entries.get(key)?.value;
  }

  /** The values held, oldest first. */
  *values(): IterableIterator<V> {
    for (let entry = this.oldest; entry; entry = entry.newer) yield entry.value;
  }

  /** Sets `key`: a key held already keeps its place in the order, a new one goes last. */
  set(key: K, value: V): void {
    const held = this.entries.get(key);
    const weight = this.weigh(value);
    if (held) {
      this.totalWeight += weight - held.weight;
      held.value = value;
      held.weight = weight;
    } else {
      const entry: Entry<K, V> = { key, value, weight, older: this.newest, newer: undefined };
      if (this.newest) this.newest.newer = entry;
      else this.oldest = entry;
      this.newest = entry;
      this.entries.set(key, entry);
      this.totalWeight += weight;
    }
    while (this.totalWeight > this.capacity && this.entries.size > 1) this.delete(this.oldest!.key);
  }

  delete(key: K): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    this.totalWeight -= entry.weight;
    if (entry.older) entry.older.newer = entry.newer;
    else this.oldest = entry.newer;
    if (entry.newer) entry.newer.older = entry.older;
    else this.newest = entry.older;
  }
}
