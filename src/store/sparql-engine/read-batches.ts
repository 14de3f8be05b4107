interface Waiting<K, V> {
  key: K;
  resolve: (value: V) => void;
  reject: (err: unknown) => void;
}

/**
 * Reads of single keys that go to the engine together when it is busy: a read waits only while `inFlight` reads are
 * with the engine, then goes with every read that waited meanwhile (up to `perRead`) in one query. The engine's cost of
 * a query is mostly its own, not its rows' (docs/sparql-engine.md, "Reads"), so under load one query answers many
 * keys, and an idle process waits for nothing.
 */
export class ReadBatches<K, V> {
  private readonly waiting: Waiting<K, V>[] = [];
  private sent = 0;

  /** `read` answers its keys' values in their order. */
  constructor(
    private readonly read: (keys: K[]) => Promise<V[]>,
    private readonly inFlight: number,
    private readonly perRead: number,
  ) {}

  get(key: K): Promise<V> {
    return new Promise<V>((resolve, reject) => {
      this.waiting.push({ key, resolve, reject });
      this.send();
    });
  }

  private send(): void {
    while (this.sent < this.inFlight && this.waiting.length > 0) {
      const batch = this.waiting.splice(0, this.perRead);
      this.sent++;
      void this.answer(batch).finally(() => {
        this.sent--;
        this.send();
      });
    }
  }

  private async answer(batch: Waiting<K, V>[]): Promise<void> {
    try {
      const values = await this.read(batch.map((w) => w.key));
      for (const [i, w] of batch.entries()) w.resolve(values[i]);
    } catch (err) {
      for (const w of batch) w.reject(err);
    }
  }
}
