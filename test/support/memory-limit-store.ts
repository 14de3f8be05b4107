/**
 * A store near the end of Oxigraph's WASM memory, in a process of its own (the WASM memory is one
 * per process, so a test that fills it must not share it with the rest of the suite):
 *   node dist/test/support/memory-limit-store.js fill <dataDir> <memoryReserveBytes>
 *     writes until the store refuses with "memory is full", prints `{ quads }` and exits without
 *     closing the store, so all of it is in the journal
 *   node dist/test/support/memory-limit-store.js open <dataDir> <memoryReserveBytes> [snapshot]
 *     opens the data directory (and folds it into a snapshot), prints `{ quads }`
 * Any failure prints `{ error }` and exits with 1.
 */
import { StoreFullError } from '../../src/store/errors.js';
import type { DurableStore } from '../../src/store/embedded/durable-store.js';
import { graphQuads, openStore } from './store-data.js';

const [mode, dataDir, memoryReserveBytes, then] = process.argv.slice(2);
const options = {
  fsync: false,
  snapshotAfterBytes: 2 ** 40,
  capacityQuads: Number.MAX_SAFE_INTEGER,
  memoryReserveBytes: Number(memoryReserveBytes),
};

/** Commits graphs of 2,000 quads until the memory reserve refuses one; any other refusal is a failure. */
async function fillUntilRefused(store: DurableStore, graphPrefix: string): Promise<void> {
  for (let i = 0; ; i++) {
    try {
      await store.commit(store.begin({ insert: graphQuads(`${graphPrefix}${i}`, 2000) }));
    } catch (err) {
      if (err instanceof StoreFullError && /memory is full/.test(err.message)) return;
      throw err;
    }
  }
}

try {
  const { store } = await openStore(dataDir, options);
  if (mode === 'fill') {
    await fillUntilRefused(store, 'g');
    process.stdout.write(`${JSON.stringify({ quads: store.capacity().quads })}\n`);
    // The process stops without closing, as a crash would: no snapshot on close, so the next
    // start replays the whole journal.
    process.exit(0);
  }
  if (then === 'snapshot') await store.snapshot();
  process.stdout.write(`${JSON.stringify({ quads: store.capacity().quads })}\n`);
  await store.close();
} catch (err) {
  process.stdout.write(`${JSON.stringify({ error: (err as Error).message })}\n`);
  process.exitCode = 1;
}
