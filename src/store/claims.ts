import { entryOf } from '../map-entry.js';

/**
 * The one concurrency rule of the write path (docs/ARCHITECTURE.md, "Concurrency: one rule"): what a write decides
 * from memory (ids, revision numbers, status changes) it claims here, in the tick it commits; the store releases
 * the claims when the commit settles. A key claimed by another write answers 409 (or, shared, is taken into
 * account): nothing ever waits for a claim.
 */
export class Claims {
  private readonly held = new Map<string, Set<unknown>>();

  /** Claims `key` for `holder` alone; false if anyone holds it. */
  take(key: string, holder: unknown): boolean {
    if (this.held.has(key)) return false;
    this.held.set(key, new Set([holder]));
    return true;
  }

  /** Claims `key` for `holder` alongside any other holders of it. */
  share(key: string, holder: unknown): void {
    entryOf(this.held, key, () => new Set()).add(holder);
  }

  isHeld(key: string): boolean {
    return this.held.has(key);
  }

  /** Who holds `key` (writes, or the records they write). */
  holders(key: string): ReadonlySet<unknown> {
    return this.held.get(key) ?? EMPTY;
  }

  release(key: string, holder: unknown): void {
    const holders = this.held.get(key);
    if (holders?.delete(holder) && holders.size === 0) this.held.delete(key);
  }
}

const EMPTY: ReadonlySet<unknown> = new Set();

/** The keys writes claim, one kind per decision they take. */
export const claimKey = {
  /** A new Logistics Object's id. */
  object: (iri: string) => `object ${iri}`,
  /** Revision `number` of an object: one write may create it. */
  revision: (iri: string, number: number) => `revision ${number} ${iri}`,
  /** A client-chosen Logistics Event id. */
  event: (iri: string) => `event ${iri}`,
  /** An action request being created or changing status: no other status change is planned meanwhile. */
  request: (iri: string) => `request ${iri}`,
  /** Where a Logistics Object has moved to (or that it has not). */
  move: (object: string) => `move ${object}`,
  /** ChangeRequests of an object whose creation (pending) is being written; holders are their records. */
  pendingChanges: (object: string) => `pending-changes ${object}`,
  /** A grant: withdrawing takes it alone; deriving a grant from it (trust chain) shares it. */
  grant: (iri: string) => `grant ${iri}`,
  /** A received notification being stored, by @id or by its sender's Idempotency-Key. */
  notification: (key: string) => `notification ${key}`,
} as const;
