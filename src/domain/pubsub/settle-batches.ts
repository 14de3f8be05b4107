import type { StoreWriter } from '../../store/graph-store.js';
import type { WriteTransaction } from '../../store/transaction.js';

/** What the settle commits of a delivery write through. */
export type SettleWriter = Pick<StoreWriter, 'begin' | 'commit'>;

interface Waiting {
  tx: WriteTransaction;
  done: () => void;
  failed: (err: unknown) => void;
}

/**
 * The settle commits of the groups one process delivers, one at a time, each taking every transaction that waited
 * meanwhile: the groups each record their queues (disjoint quads), and the engine pays a commit's fixed cost once
 * for them all, not once per group.
 */
export class SettleBatches implements SettleWriter {
  private waiting: Waiting[] = [];
  private committing = false;

  constructor(private readonly store: StoreWriter) {}

  begin(): WriteTransaction {
    return this.store.begin();
  }

  commit(tx: WriteTransaction): Promise<void> {
    return new Promise<void>((done, failed) => {
      this.waiting.push({ tx, done, failed });
      this.next();
    });
  }

  private next(): void {
    if (this.committing || this.waiting.length === 0) return;
    const batch = this.waiting;
    this.waiting = [];
    this.committing = true;
    const tx = batch.length === 1 ? batch[0].tx : this.merged(batch.map((b) => b.tx));
    this.store
      .commit(tx)
      .then(
        () => {
          for (const b of batch) b.done();
        },
        (err: unknown) => {
          for (const b of batch) b.failed(err);
        },
      )
      .finally(() => {
        this.committing = false;
        this.next();
      });
  }

  /**
   * One transaction doing what each of `parts` does (settle commits only delete, insert, remove graphs, tell events).
   */
  private merged(parts: readonly WriteTransaction[]): WriteTransaction {
    const tx = this.store.begin();
    for (const part of parts) {
      tx.delete.push(...part.delete);
      tx.insert.push(...part.insert);
      tx.removedGraphs.push(...part.removedGraphs);
      tx.emptiedGraphs.push(...part.emptiedGraphs);
      tx.events.push(...part.events);
    }
    return tx;
  }
}
