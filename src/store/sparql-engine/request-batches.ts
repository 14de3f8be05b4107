interface Waiting<K, V> {
  key: K;
  resolve: (value: V) => void;
  reject: (err: unknown) => void;
}

/**
 * Requests of single keys that go to the engine together when it is busy: a request waits only while `inFlight` are
 * with the engine, then goes with every one that waited meanwhile (up to `perRequest`) in one. The engine's cost of a
 * request is mostly its own, not its rows' or operations' (docs/sparql-engine.md, "Reads" and "Write cost"), so
 * under load one request serves many, and an idle process waits for nothing.
 */
export class RequestBatches<K, V> {
  private readonly waiting: Waiting<K, V>[] = [];
  private sent = 0;

  /** `request` answers its keys' values in their order; an Error in their place fails that key alone. */
  constructor(
    private readonly request: (keys: K[]) => Promise<(V | Error)[]>,
    private readonly inFlight: number,
    private readonly perRequest: number,
  ) {}

  get(key: K): Promise<V> {
    return new Promise<V>((resolve, reject) => {
      this.waiting.push({ key, resolve, reject });
      this.send();
    });
  }

  private send(): void {
    while (this.sent < this.inFlight && this.waiting.length > 0) {
      const batch = this.waiting.splice(0, this.perRequest);
      this.sent++;
      void this.answer(batch).finally(() => {
        this.sent--;
        this.send();
      });
    }
  }

  private async answer(batch: Waiting<K, V>[]): Promise<void> {
    try {
      const values = await this.request(batch.map((w) => w.key));
      for (const [i, w] of batch.entries()) {
        const value = values[i];
        if (value instanceof Error) w.reject(value);
        else w.resolve(value);
      }
    } catch (err) {
      for (const w of batch) w.reject(err);
    }
  }
}
