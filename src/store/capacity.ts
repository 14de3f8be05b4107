/** How full the store is (`/health/ready`, `/metrics`). */
export interface StoreCapacity {
  /** Quads held: counted at start, then kept by each commit (inserted minus deleted lines). */
  quads: number;
  capacityQuads: number;
  /** Quads that may still be written: capacity minus what is held and what is being committed. */
  headroomQuads: number;
  /** Size of Oxigraph's WASM memory (grown ahead of need) and where it ends. */
  wasmMemoryBytes: number;
  wasmMemoryLimitBytes: number;
  memoryReserveBytes: number;
  /** Why writes are refused, if they are: the store is full, or a record could not be applied. */
  writesRefused?: string;
}

/** A write refused because the store has no room for it; nothing of it was journaled. */
export class StoreFullError extends Error {}

/** A write refused because an earlier durable record could not be applied: the store must restart. */
export class StoreFailedError extends Error {}

/** The data directory holds more than the embedded store can load: the start stops, nothing on disk changed. */
export class StoreTooLargeError extends Error {}

export const MOVE_DATA = 'Move the data to a larger backend: `onerecord export` writes it out as N-Quads (see the README, "Capacity").';
