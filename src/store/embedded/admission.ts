import { MOVE_DATA, type StoreCapacity } from '../capacity.js';
import { StoreFailedError, StoreFullError } from '../errors.js';
import type { IndexCompactor } from './compaction/compaction.js';
import { WASM_MEMORY_LIMIT_BYTES, type OxigraphIndex } from './oxigraph/oxigraph-index.js';
import type { BuiltRecord } from './record-builder.js';

export interface AdmissionOptions {
  capacityQuads: number;
  memoryReserveBytes: number;
}

/**
 * Capacity admission: the quads the store holds and those being written, and whether a write is
 * let in. A write is refused before anything is journaled, so a refusal never leaves half a change.
 */
export class CapacityAdmission {
  /** Quads held (see StoreCapacity). */
  quads = 0;
  /** The net quads of records admitted but not yet applied. */
  private pendingQuads = 0;
  /** Set when a durable record could not be applied: every later write is refused. */
  failed: Error | undefined;
  /** Why the last write was refused for lack of room, until one is admitted again. */
  private full: string | undefined;

  constructor(
    private readonly index: OxigraphIndex,
    private readonly compactor: Pick<IndexCompactor, 'memoryFull'>,
    private readonly options: AdmissionOptions,
  ) {}

  /** How full the store is. */
  capacity(): StoreCapacity {
    const { capacityQuads, memoryReserveBytes } = this.options;
    return {
      quads: this.quads,
      capacityQuads,
      headroomQuads: Math.max(0, capacityQuads - this.quads - this.pendingQuads),
      wasmMemoryBytes: this.index.wasmMemoryBytes,
      wasmMemoryLimitBytes: WASM_MEMORY_LIMIT_BYTES,
      memoryReserveBytes,
      ...((this.failed || this.full) && {
        writesRefused: this.failed
          ? `a change could not be applied (${this.failed.message}); restart the server`
          : this.full,
      }),
    };
  }

  /**
   * Refuses, before anything is journaled, a record that would take the store past its capacity
   * in quads or WASM memory. A record that frees more than it adds is always let through.
   * Returns the quads it adds.
   */
  admit(record: BuiltRecord): number {
    if (this.failed)
      throw new StoreFailedError(
        `writes are refused until the server restarts: a change could not be applied (${this.failed.message})`,
      );
    const growth = record.inserted - record.deleted;
    if (growth <= 0) {
      this.full = undefined;
      return growth;
    }
    const { capacityQuads } = this.options;
    const after = this.quads + this.pendingQuads + growth;
    if (after > capacityQuads) {
      this.full =
        `the store is full: it holds ${this.quads} quads (${this.pendingQuads} more being written) of its ` +
        `capacity of ${capacityQuads} (store.capacityQuads), and this change adds ${growth}`;
    } else if (!this.index.makeRoom(record.insert.length)) {
      this.compactor.memoryFull(this.quads);
      this.full =
        `the store's memory is full: Oxigraph's WASM memory (at most ${WASM_MEMORY_LIMIT_BYTES / 2 ** 30} ` +
        `GiB) cannot take this change and keep store.memoryReserveBytes (${this.options.memoryReserveBytes}) free ` +
        `for reads`;
    } else {
      this.full = undefined;
      return growth;
    }
    throw new StoreFullError(`${this.full}. Nothing was stored; reads go on. ${MOVE_DATA}`);
  }

  /**
   * Counts an admitted record's `growth` as being written, so that writes admitted meanwhile see
   * it; the returned function stops counting it (once, however often called).
   */
  pending(growth: number): () => void {
    this.pendingQuads += growth;
    let counted = true;
    return () => {
      if (counted) this.pendingQuads -= growth;
      counted = false;
    };
  }
}
