import type { StoreWriter } from '../../store/graph-store.js';
import type { Outbox } from './outbox.js';

/**
 * The writing side of the store as the domain's writers get it: every commit first puts the
 * notifications it causes in the outbox (the same transaction, numbered by `outbox`), then goes
 * to `writer`. Only `commit` changes; the reads never pass through here.
 */
export function notifyingWriter(writer: StoreWriter, outbox: Outbox): StoreWriter {
  return {
    get claims() {
      return writer.claims;
    },
    get committed() {
      return writer.committed;
    },
    begin: (quads) => writer.begin(quads),
    async commit(tx) {
      let objects = outbox.objectsToPlan(tx);
      if (objects instanceof Promise) {
        // Refused before the store sees it: its claims go, as a refused commit's do.
        objects = await objects.catch((err: unknown) => {
          tx.release();
          throw err;
        });
      }
      const planned = outbox.plan(tx, objects);
      try {
        await writer.commit(tx);
      } finally {
        // Applied or not, its numbers are no longer under way.
        outbox.settled(planned);
      }
    },
  };
}
