// Why the store refuses a write or a start; the HTTP layer maps each to its status in one place.

/** A write refused because the store has no room for it; nothing of it was journaled. */
export class StoreFullError extends Error {}

/** A write refused because an earlier durable record could not be applied: the store must restart. */
export class StoreFailedError extends Error {}

/** The data directory holds more than the embedded store can load: the start stops, nothing on disk changed. */
export class StoreTooLargeError extends Error {}

/**
 * A write that could not be made durable (the journal, or the engine, cannot take it now): nothing of it was applied; a
 * later one may succeed.
 */
export class StoreUnavailableError extends Error {}

/**
 * What another writer filled first: a new object's first revision, an object's next revision, an action request's next
 * status, an outbox entry's number.
 */
export type WriteSlot = 'object' | 'revision' | 'request' | 'outbox';

/**
 * A write refused because another writer's commit (another server process on the same engine)
 * filled a slot it fills first; nothing of it was applied.
 */
export class StoreConflictError extends Error {
  constructor(
    readonly slot: WriteSlot,
    /** The object or action request. */
    readonly resource: string,
  ) {
    super(`${slot} ${resource} was written by another writer first`);
  }
}
