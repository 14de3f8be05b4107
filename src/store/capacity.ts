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

export const MOVE_DATA =
  'Move the data to a larger backend: `onerecord export` writes it out as N-Quads (see the README, "Capacity").';
