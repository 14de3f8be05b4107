/** What a process does while it holds a lease, and when it must stop. */
export interface LeaseHolder {
  /** This process holds the lease from now on. */
  gained(): void;
  /** This process must stop what the lease covers now: its term ends (or could not be renewed). */
  lost(): void;
}

/**
 * A lease that one server process at a time holds among the processes on one store (the delivery
 * of notifications): given to whoever asks while nobody holds it, renewed by its holder, taken by
 * another once its holder stopped renewing it.
 */
export interface Lease {
  start(holder: LeaseHolder): void;
  /** Gives the lease up (its holder is told `lost`). */
  stop(): Promise<void>;
}
