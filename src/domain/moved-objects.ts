import type { AccessControl, Caller } from '../auth/access-control.js';
import { HttpError, badRequest, notFound } from '../errors.js';
import { isValidIri } from '../rdf/terms.js';
import type { GraphStore } from '../store/graph-store.js';
import { moveQuads, type MoveRecord } from '../store/schema/moved-objects.js';
import type { LogisticsObjects } from './logistics-objects.js';

/** Where a request for a moved object goes instead. */
export interface Redirect {
  status: 301 | 302;
  location: string;
}

/**
 * Logistics Objects moved to another URL (DECISIONS "Moved resources"): internal actors mark and
 * unmark them; while moved, the object and everything under its URL answer with a redirect.
 * The moves are bookkeeping quads committed like every other write, so they survive a restart.
 */
export class MovedObjects {
  private readonly moves: Map<string, MoveRecord>;
  /** Objects whose move is being written: a second change of the same object meanwhile is 409. */
  private readonly writing = new Set<string>();

  constructor(
    private readonly store: GraphStore,
    private readonly objects: LogisticsObjects,
    private readonly access: AccessControl,
    stored: readonly MoveRecord[],
  ) {
    this.moves = new Map(stored.map((m) => [m.object, m]));
  }

  list(caller: Caller): MoveRecord[] {
    this.access.requireInternal(caller, 'listing moved objects');
    return [...this.moves.values()];
  }

  get(object: string, caller: Caller): MoveRecord {
    this.access.requireInternal(caller, 'reading moves');
    const move = this.moves.get(object);
    if (!move) throw notFound(object, 'this Logistics Object is not marked as moved');
    return move;
  }

  /** Marks `object` as moved to `location` (replacing an earlier move of it). */
  async move(object: string, location: string, permanent: boolean, caller: Caller): Promise<MoveRecord> {
    this.access.requireInternal(caller, 'moving Logistics Objects');
    if (!this.objects.index.get(object)) throw notFound(object, 'Logistics Object not found');
    if (!/^https?:\/\//i.test(location) || !isValidIri(location) || !URL.canParse(location)) {
      throw badRequest('invalid_location', 'location must be an absolute http or https URL', 'location');
    }
    if (location === object) throw badRequest('invalid_location', 'location must differ from the object\'s own URL', 'location');
    const move: MoveRecord = { object, location, permanent, movedAt: new Date(), movedBy: caller.agent };
    const previous = this.moves.get(object);
    await this.write(object, { insert: moveQuads(move), delete: previous && moveQuads(previous) }, () => this.moves.set(object, move));
    return move;
  }

  /** Undoes the move of `object`: it answers here again. */
  async restore(object: string, caller: Caller): Promise<void> {
    const move = this.get(object, caller);
    await this.write(object, { insert: [], delete: moveQuads(move) }, () => this.moves.delete(object));
  }

  /**
   * The redirect for a request to `object` (plus `rest`: the path under it and the query),
   * or undefined when the object has not moved. Only callers who may read the object learn
   * where it went; others get the answer they would get for the object itself (403 or 404).
   */
  redirect(object: string, rest: string, caller: Caller): Redirect | undefined {
    const move = this.moves.get(object);
    if (!move) return undefined;
    this.objects.readableEntry(object, caller);
    return { status: move.permanent ? 301 : 302, location: `${move.location}${rest}` };
  }

  private async write(object: string, change: Parameters<GraphStore['commit']>[0], onApplied: () => void): Promise<void> {
    if (this.writing.has(object)) throw new HttpError(409, 'move_busy', { message: 'another move of this Logistics Object is being written; retry', resource: object });
    this.writing.add(object);
    try {
      await this.store.commit(change, onApplied);
    } finally {
      this.writing.delete(object);
    }
  }
}
