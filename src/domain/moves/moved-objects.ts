import type { Authorizer, Caller } from '../access/authorizer.js';
import { HttpError, badRequest, notFound } from '../../errors.js';
import { isValidIri } from '../../rdf/terms.js';
import { claimKey } from '../../store/claims.js';
import type { StoreWriter } from '../../store/graph-store.js';
import { moveQuads, type MoveRecord } from '../../store/schema/moved-objects.js';
import type { DomainEvent, WriteTransaction } from '../../store/transaction.js';
import type { LogisticsObjects } from '../objects/logistics-objects.js';

/** Where a request for a moved object goes instead. */
export interface Redirect {
  status: 301 | 302;
  location: string;
}

/**
 * Logistics Objects moved to another URL (docs/behaviour.md, "Moved objects"): internal actors mark and
 * unmark them; while moved, the object and everything under its URL answer with a redirect.
 * The moves are bookkeeping quads committed like every other write, so they survive a restart;
 * the map of moves is kept by the after-commit stream.
 */
export class MovedObjects {
  private readonly moves = new Map<string, MoveRecord>();

  constructor(
    private readonly store: StoreWriter,
    private readonly objects: LogisticsObjects,
    private readonly access: Authorizer,
  ) {}

  /** Consumer of the after-commit stream. */
  onCommitted(events: readonly DomainEvent[]): void {
    for (const e of events) {
      if (e.kind === 'object-moved') this.moves.set(e.move.object, e.move);
      else if (e.kind === 'object-move-undone') this.moves.delete(e.object);
    }
  }

  /** Whether any object is marked as moved (no redirect to look for otherwise). */
  get any(): boolean {
    return this.moves.size > 0;
  }

  list(caller: Caller): MoveRecord[] {
    this.access.check(caller, { kind: 'operate', what: 'listing moved objects' });
    return [...this.moves.values()];
  }

  get(object: string, caller: Caller): MoveRecord {
    this.access.check(caller, { kind: 'operate', what: 'reading moves' });
    const move = this.moves.get(object);
    if (!move) throw notFound(object, 'this Logistics Object is not marked as moved');
    return move;
  }

  /** Marks `object` as moved to `location` (replacing an earlier move of it). */
  async move(object: string, location: string, permanent: boolean, caller: Caller): Promise<MoveRecord> {
    this.access.check(caller, { kind: 'operate', what: 'moving Logistics Objects' });
    await this.objects.existing(object);
    if (!/^https?:\/\//i.test(location) || !isValidIri(location) || !URL.canParse(location)) {
      throw badRequest('invalid_location', 'location must be an absolute http or https URL', 'location');
    }
    if (location === object)
      throw badRequest('invalid_location', "location must differ from the object's own URL", 'location');
    const move: MoveRecord = { object, location, permanent, movedAt: new Date(), movedBy: caller.agent };
    const previous = this.moves.get(object);
    const tx = this.claimed(object);
    tx.insert.push(...moveQuads(move));
    if (previous) tx.delete.push(...moveQuads(previous));
    tx.events.push({ kind: 'object-moved', move });
    await this.store.commit(tx);
    return move;
  }

  /** Undoes the move of `object`: it answers here again. */
  async restore(object: string, caller: Caller): Promise<void> {
    const move = this.get(object, caller);
    const tx = this.claimed(object);
    tx.delete.push(...moveQuads(move));
    tx.events.push({ kind: 'object-move-undone', object });
    await this.store.commit(tx);
  }

  /**
   * The redirect for a request to `object` (plus `rest`: the path under it and the query),
   * or undefined when the object has not moved. Only callers who may read the object learn
   * where it went; others get the answer they would get for the object itself (403 or 404).
   */
  redirect(object: string, rest: string, caller: Caller): Promise<Redirect> | undefined {
    const move = this.moves.get(object);
    if (!move) return undefined;
    return this.objects
      .readableEntry(object, caller)
      .then(() => ({ status: move.permanent ? 301 : 302, location: `${move.location}${rest}` }));
  }

  /** A transaction holding the claim on `object`'s move: 409 while another move of it is being written. */
  private claimed(object: string): WriteTransaction {
    const tx = this.store.begin();
    if (!tx.claim(claimKey.move(object)))
      throw new HttpError(409, 'move_busy', {
        message: 'another move of this Logistics Object is being written; retry',
        resource: object,
      });
    return tx;
  }
}
