import type { Authorizer, Caller } from '../access/authorizer.js';
import type { DecisionPolicy } from '../../config.js';
import { HttpError } from '../../errors.js';
import type { CargoOntology } from '../../rdf/ontology.js';
import { namedNode, quad, type Quad } from '../../rdf/terms.js';
import { INTERNAL_SCHEME, api, requestStatus } from '../../rdf/vocab.js';
import { currentStatus, type ActionRequestRecord } from './action-request-index.js';
import type { AcceptHandler, ActionRequests, RequestWrite } from './action-requests.js';
import { applyChange, changeLiterals } from './apply-change.js';
import { changeQuads, parseChange, requireChangeType, type Change, type ChangeContext } from './changes.js';
import type { LogisticsObjects, RevisionChange } from '../objects/logistics-objects.js';
import type { LogisticsObjectEntry } from '../objects/revision-index.js';
import { newEmbeddedIri } from '../objects/new-objects.js';
import { shapeError } from '../../shapes/validator.js';
import { claimKey, type Claims } from '../../store/claims.js';
import type { StoreReader } from '../../store/graph-store.js';
import type { WriteTransaction } from '../../store/transaction.js';

/** Which ChangeRequests of an object an audit trail shows. */
export interface AuditFilter {
  /** Requests with a status change at or after this instant. */
  from?: Date;
  /** Requests with a status change at or before this instant. */
  to?: Date;
  /** Current statuses to keep; all when absent. */
  statuses?: ReadonlySet<string>;
}

export interface AuditTrail {
  entry: LogisticsObjectEntry;
  latestRevision: number;
  requests: ActionRequestRecord[];
}

const REVISION_CONFLICT = 'Conflict with Logistics Object revision number';

const revisionConflict = (message: string, object: string) =>
  new HttpError(409, 'revision_conflict', { message, resource: object }, REVISION_CONFLICT);

function inWindow(record: ActionRequestRecord, filter: AuditFilter): boolean {
  if (filter.statuses && !filter.statuses.has(currentStatus(record))) return false;
  const from = filter.from?.getTime() ?? -Infinity;
  const to = filter.to?.getTime() ?? Infinity;
  return record.statuses.some((s) => s.since.getTime() >= from && s.since.getTime() <= to);
}

/**
 * ChangeRequests (PATCH on a Logistics Object): submission, the decision policy, and
 * accepting, which applies the Change as a new revision in the same commit as the status
 * change. Between checking a Change against the current revision and claiming the next one
 * nothing awaits, so concurrent Changes on one revision end with one accepted, the rest 409
 * (the claims are those of the one concurrency rule, see src/store/claims.ts).
 */
export class ChangeRequests implements AcceptHandler {
  constructor(
    private readonly reads: StoreReader,
    /** Claims of writes in flight: the Changes pending on an object. */
    private readonly claims: Claims,
    private readonly access: Authorizer,
    private readonly objects: LogisticsObjects,
    private readonly requests: ActionRequests,
    private readonly ontology: CargoOntology,
    private readonly policy: DecisionPolicy,
    /** The data holder, recorded as the one who decided when the policy decides. */
    private readonly holder: string,
  ) {}

  /** What parsing a Change of `object` checks its `triples` against. */
  private async context(object: string, triples: readonly Quad[]): Promise<ChangeContext> {
    return {
      object,
      objectsPrefix: this.objects.objectsPrefix,
      isLogisticsObjectClass: (iri) => this.ontology.isLogisticsObjectClass(iri),
      isClass: (iri) => this.ontology.isClass(iri),
      exists: await this.objects.existenceIn(triples),
    };
  }

  /** `auto` accepts at once when the requester holds PATCH_LOGISTICS_OBJECT (internal actors, the creator, a grant). */
  private acceptsAtOnce(caller: Caller, entry: LogisticsObjectEntry): boolean {
    return (
      this.policy === 'all' ||
      (this.policy === 'auto' && this.access.allows(caller, { kind: 'change-object', object: entry }))
    );
  }

  /**
   * PATCH /logistics-objects/{id} on `entry` (found with `LogisticsObjects.existing`): records the
   * Change as a ChangeRequest and, when the policy says so, decides it at once, in one transaction
   * begun and committed here. 400 (nothing stored) for a Change that cannot be read.
   */
  async submit(entry: LogisticsObjectEntry, body: Quad[], caller: Caller): Promise<ActionRequestRecord> {
    const object = entry.iri;
    this.access.check(caller, { kind: 'submit-change', object: entry });
    const typed = requireChangeType(body);
    const received = this.objects.shapeViolations(typed);
    if (received.length > 0) throw shapeError(received, 400);
    const change = parseChange(typed, await this.context(object, typed));
    const record = this.requests.newRecord(api.ChangeRequest, caller.agent, [object], change.notify);
    const changeIri = `${INTERNAL_SCHEME}${record.iri.slice(this.requests.prefix.length)}-change`;
    const write = this.requests.write();
    write.create(record, [
      quad(namedNode(record.iri), namedNode(api.hasLogisticsObject), namedNode(object)),
      quad(namedNode(record.iri), namedNode(api.hasChange), namedNode(changeIri)),
      ...changeQuads(change, changeIri),
    ]);
    // A requester who may not read the object must not learn its revisions by trying them: its
    // Change stays pending whatever revision it names, like one on the latest, until the holder
    // decides it (an accept then rejects an outdated one); no policy decides it at once.
    const mayRead = this.access.allows(caller, { kind: 'read-object', object: entry });
    const outdated = mayRead ? this.outdated(entry, change.revision) : undefined;
    if (mayRead && this.acceptsAtOnce(caller, entry)) await this.settle(entry, record, change, write, this.holder);
    else if (outdated) write.transition(record, { to: requestStatus.REJECTED, by: this.holder, errors: [outdated] });
    // Pending while its creation is written: an accept meanwhile rejects it along with the stored ones.
    else write.tx.share(claimKey.pendingChanges(object), record);
    await this.requests.commit(write);
    return record;
  }

  /**
   * The holder accepts a pending ChangeRequest (PATCH /action-requests/{id}) into `write`, which
   * `ActionRequests.decide` commits; returns the error recorded when the Change cannot apply.
   */
  async accept(record: ActionRequestRecord, decidedBy: string, write: RequestWrite): Promise<HttpError | undefined> {
    const entry = await this.objects.existing(record.objects[0]);
    const stored = await this.requests.storedTriples(record);
    const change = parseChange(stored, await this.context(entry.iri, stored));
    return this.settle(entry, record, change, write, decidedBy);
  }

  /**
   * Decides a ChangeRequest into `write`: REJECTED (409) on an outdated revision, FAILED (422) when
   * an operation cannot apply, else ACCEPTED with the new revision, rejecting every other pending
   * ChangeRequest on the same revision. Returns the error recorded, if any.
   */
  private async settle(
    entry: LogisticsObjectEntry,
    record: ActionRequestRecord,
    change: Change,
    write: RequestWrite,
    decidedBy: string,
  ): Promise<HttpError | undefined> {
    const prepared = await this.prepare(write.tx, entry, change);
    if (prepared instanceof HttpError) {
      write.transition(record, {
        to: prepared.status === 422 ? requestStatus.FAILED : requestStatus.REJECTED,
        by: decidedBy,
        errors: [prepared],
      });
      return prepared;
    }
    const { triples, number, change: made } = prepared;
    const current = prepared.entry;
    write.transition(record, { to: requestStatus.ACCEPTED, by: decidedBy });
    const others = this.pendingOn(current.iri, record);
    if (others.size > 0) {
      const superseded = revisionConflict(
        `revision ${change.revision} was superseded: another change of it was accepted`,
        entry.iri,
      );
      for (const other of others)
        write.transition(other, { to: requestStatus.REJECTED, by: decidedBy, errors: [superseded] });
    }
    this.objects.addRevision(write.tx, current, number, triples, record.requestedBy, made);
    return undefined;
  }

  /** The new revision's triples and its claimed number, or the error that stops the Change. */
  private async prepare(
    tx: WriteTransaction,
    entry: LogisticsObjectEntry,
    change: Change,
  ): Promise<{ entry: LogisticsObjectEntry; triples: Quad[]; number: number; change: RevisionChange } | HttpError> {
    const stale = this.outdated(entry, change.revision);
    if (stale) return stale;
    const current = await this.objects.triples(this.objects.index.latest(entry));
    const canonicalLiterals = await this.reads.canonicalLiterals(changeLiterals(change));
    // A bounded index may have let the entry go meanwhile (its latest revision then no longer kept up to date): the
    // object as the index knows it now, the last wait before the claim.
    let now = this.objects.index.current(entry);
    while (now instanceof Promise) {
      const found = await now;
      now = found && this.objects.index.current(found);
    }
    entry = now ?? entry;
    // From here to the claim of the next revision nothing awaits: checked again, as another change may have been
    // written meanwhile.
    const outdated = this.outdated(entry, change.revision);
    if (outdated) return outdated;
    const applied = applyChange(current, change, {
      object: entry.iri,
      isLogisticsObjectClass: (iri) => this.ontology.isLogisticsObjectClass(iri),
      canonicalLiterals,
      newEmbeddedIri,
    });
    if (!applied.ok) return applied.error;
    // The resulting revision is what must fit the data model, whatever earlier revisions held.
    const violations = this.objects.shapeViolations(applied.triples, {
      previous: current,
      added: applied.added,
      removed: applied.removed,
      byNode: applied.byNode,
    });
    if (violations.length > 0) return shapeError(violations, 422);
    const number = this.objects.claimNextRevision(tx, entry);
    if (number === undefined) return revisionConflict('another change of this revision is being written', entry.iri);
    return {
      entry,
      triples: applied.triples,
      number,
      change: { previous: current, added: applied.added, removed: applied.removed },
    };
  }

  /**
   * The 409 of a Change built on a revision that is not (or soon no longer) the latest. The error
   * is stored in the ChangeRequest, which its requester reads whether or not they may read the
   * object: it names no revision but the Change's own.
   */
  private outdated(entry: LogisticsObjectEntry, revision: number): HttpError | undefined {
    const latest = this.objects.index.latest(entry).number;
    if (this.objects.isNextRevisionClaimed(entry))
      return revisionConflict('the next revision of this Logistics Object is being written', entry.iri);
    if (revision !== latest)
      return revisionConflict(
        `the Change was built on revision ${revision}, which is not the latest revision of the Logistics Object`,
        entry.iri,
      );
    return undefined;
  }

  /** Pending ChangeRequests of an object that an accept must reject with it, stored or being stored. */
  private pendingOn(object: string, accepted: ActionRequestRecord): Set<ActionRequestRecord> {
    const out = new Set<ActionRequestRecord>();
    for (const r of this.requests.index.pendingFor(object))
      if (r.type === api.ChangeRequest && !this.requests.isBusy(r)) out.add(r);
    for (const r of this.claims.holders(claimKey.pendingChanges(object)) as ReadonlySet<ActionRequestRecord>) {
      if (r.statuses.length === 0 || currentStatus(r) === requestStatus.PENDING) out.add(r);
    }
    out.delete(accepted);
    return out;
  }

  /** GET /logistics-objects/{id}/audit-trail: readable by whoever may read the object. */
  async auditTrail(object: string, caller: Caller, filter: AuditFilter): Promise<AuditTrail> {
    const entry = await this.objects.readableEntry(object, caller);
    return {
      entry,
      latestRevision: this.objects.index.latest(entry).number,
      requests: (await this.requests.changeRequestsOf(object)).filter((r) => inWindow(r, filter)),
    };
  }
}
