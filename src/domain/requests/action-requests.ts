import { randomUUID } from 'node:crypto';
import type { Authorizer, Caller } from '../access/authorizer.js';
import { HttpError, badQuery, notFound } from '../../errors.js';
import { namedNode, quad, type Quad } from '../../rdf/terms.js';
import { INTERNAL_SCHEME, STORE, api, apiLocalName, rdf, requestStatus } from '../../rdf/vocab.js';
import { claimKey, type Claims } from '../../store/claims.js';
import type { StoreReader, StoreWriter } from '../../store/graph-store.js';
import { requestQuads, statusEntryQuads, type StatusEntry } from '../../store/schema/action-requests.js';
import type { WriteTransaction } from '../../store/transaction.js';
import { apiErrorQuads, withCurrentErrorDetailClass } from '../api-errors.js';
import {
  byRequestTime,
  currentStatus,
  type ActionRequestIndex,
  type ActionRequestRecord,
} from './action-request-index.js';

/** A status change to write: who made it, when, and what it records. */
export interface Transition {
  to: string;
  by: string;
  at?: Date;
  /** Stored as api:Error nodes in the request's hasError. */
  errors?: readonly HttpError[];
  /** Sets isRevokedBy / isRevokedAt. */
  revoked?: boolean;
}

/**
 * What is particular to one kind of action request (ChangeRequest, AccessDelegationRequest,
 * SubscriptionRequest); creation, decisions, revocation, status history, errors, reading and
 * listing are shared (ActionRequests). A kind creates its requests with `ActionRequests.write()`
 * and `RequestWrite.create`, and registers itself with `ActionRequests.registerAcceptor`.
 */
export interface AcceptHandler {
  /**
   * Accepts a pending request into `write` (which holds the request's claim: no other decision of
   * it starts meanwhile), which the caller commits; returns the HttpError recorded when the
   * request ends rejected or failed instead.
   */
  accept(record: ActionRequestRecord, decidedBy: string, write: RequestWrite): Promise<HttpError | undefined>;
  /**
   * Adds to `write` (which already revokes `record`) what revoking this kind of request undoes,
   * committed with the status change (an access delegation withdraws its grants). May throw an
   * HttpError (nothing is written then).
   */
  revoked?(write: RequestWrite, record: ActionRequestRecord, revokedBy: string): void;
}

export interface ActionRequestFilter {
  status?: string;
  type?: string;
  object?: string;
}

/** Two lists each in `byRequestTime` order merged into one: the store's list comes in that order, unsorted. */
function inRequestOrder(a: readonly ActionRequestRecord[], b: readonly ActionRequestRecord[]): ActionRequestRecord[] {
  if (a.length === 0 || b.length === 0) return a.length === 0 ? [...b] : [...a];
  const out: ActionRequestRecord[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) out.push(byRequestTime(a[i], b[j]) <= 0 ? a[i++] : b[j++]);
  return out.concat(a.slice(i), b.slice(j));
}

/** Requests finished per commit at start (`finishStored`): a commit's record stays a few MB at most. */
const FINISHED_PER_COMMIT = 500;

/** The statuses PATCH /action-requests/{id}?status= may ask for. */
const DECISIONS: readonly string[] = [requestStatus.ACCEPTED, requestStatus.REJECTED, requestStatus.REVOKED];

/** Which statuses a request may be revoked from (docs/behaviour.md, "Action requests"). */
const REVOCABLE: Readonly<Record<string, readonly string[]>> = {
  [api.ChangeRequest]: [requestStatus.PENDING],
  [api.AccessDelegationRequest]: [requestStatus.PENDING, requestStatus.ACCEPTED],
  [api.SubscriptionRequest]: [requestStatus.PENDING, requestStatus.ACCEPTED],
};

/** Whether `status` is final for a request of `type`: no decision or revocation can change it. */
export const isFinal = (type: string, status: string): boolean =>
  status !== requestStatus.PENDING && !(REVOCABLE[type] ?? []).includes(status);

/**
 * Nodes whose type follows from the property that links them (its range in the API ontology).
 * Those types are not stored, which keeps a ChangeRequest with five operations 13 quads smaller.
 */
const TYPE_BY_LINK: ReadonlyMap<string, string> = new Map([
  [api.hasChange, api.Change],
  [api.hasOperation, api.Operation],
  [api.o, api.OperationObject],
  [api.hasRequestStatusHistory, api.RequestStatusEntry],
]);

/** `triples` plus the type of every node linked by a property in TYPE_BY_LINK, each stated once. */
function withImpliedTypes(triples: Quad[]): Quad[] {
  const typed = new Set(
    triples.filter((t) => t.predicate.value === rdf.type).map((t) => `${t.subject.value} ${t.object.value}`),
  );
  const out = [...triples];
  for (const t of triples) {
    const type = TYPE_BY_LINK.get(t.predicate.value);
    if (type === undefined || t.object.termType !== 'NamedNode' || typed.has(`${t.object.value} ${type}`)) continue;
    typed.add(`${t.object.value} ${type}`);
    out.push(quad(t.object, namedNode(rdf.type), namedNode(type)));
  }
  return out;
}

/**
 * Creations and status changes of action requests, written into one transaction. Every
 * request it touches is claimed (`claimKey.request`) until the commit settles, so no other
 * status change of it is planned meanwhile; the index learns them from the after-commit stream.
 * Everything is insert-only: a request's graph (named after it) gains one status entry per change.
 */
export class RequestWrite {
  /** Status entries planned per request in this transaction. */
  private readonly planned = new Map<ActionRequestRecord, number>();
  private readonly held = new Set<ActionRequestRecord>();
  /** Requests this write creates, or gives a final status it cannot finish (`finishes`): finished after it if due. */
  readonly toFinish: ActionRequestRecord[] = [];

  constructor(
    readonly tx: WriteTransaction,
    private readonly claims: Claims,
  ) {}

  /** A new request (pending, requested by its requester): its identifying triples plus `body` (its own content). */
  create(record: ActionRequestRecord, body: Quad[]): void {
    this.tx.insert.push(...requestQuads(record, body));
    this.tx.created.add(record.iri);
    this.tx.share(claimKey.request(record.iri));
    this.toFinish.push(record);
    const status = this.entry(record, { to: requestStatus.PENDING, by: record.requestedBy, at: record.requestedAt });
    this.tx.events.push({ kind: 'action-request-created', request: record, status, body });
  }

  /**
   * Claims `record` for this write before it is decided: what the decision reads meanwhile is read with no other status
   * change of it under way.
   */
  hold(record: ActionRequestRecord): void {
    if (this.held.has(record)) return;
    this.held.add(record);
    this.tx.share(claimKey.request(record.iri));
  }

  transition(record: ActionRequestRecord, t: Transition): void {
    if (!this.planned.has(record)) this.hold(record);
    const status = this.entry(record, t);
    const finished = this.finishes(record, t.to);
    if (finished) this.tx.finished.push(record.iri);
    else if (isFinal(record.type, t.to)) this.toFinish.push(record);
    this.tx.events.push({
      kind: t.revoked ? 'action-request-revoked' : 'action-request-decided',
      request: record,
      status,
      finished,
    });
  }

  /**
   * A status nothing can change any more (isFinal) is a request's last: its graph is then finished, and the store may
   * keep it out of its hot part. Not while another write of it is still in flight (its creation, when an accept rejects
   * it meanwhile): that write must land in the hot store first, and `ActionRequests.finishLater` finishes it after.
   */
  private finishes(record: ActionRequestRecord, to: string): boolean {
    if (!isFinal(record.type, to)) return false;
    for (const holder of this.claims.holders(claimKey.request(record.iri))) if (holder !== this.tx) return false;
    return true;
  }

  /** Finishes a request that already has its final status (its graph leaves the hot store), with no status change. */
  finish(record: ActionRequestRecord): void {
    this.hold(record);
    this.tx.finished.push(record.iri);
    this.tx.events.push({ kind: 'action-request-finished', request: record });
  }

  private entry(record: ActionRequestRecord, t: Transition): StatusEntry {
    const number = (this.planned.get(record) ?? record.statuses.length) + 1;
    const entry = {
      iri: `${INTERNAL_SCHEME}${randomUUID()}`,
      number,
      status: t.to,
      since: t.at ?? new Date(),
      changedBy: t.by,
    };
    this.tx.insert.push(...statusEntryQuads(record.iri, entry, t));
    const g = namedNode(record.iri);
    for (const error of t.errors ?? []) {
      const errorIri = `${record.iri}/errors/${randomUUID()}`;
      this.tx.insert.push(
        quad(g, namedNode(api.hasError), namedNode(errorIri), g),
        ...apiErrorQuads(error, errorIri, g),
      );
    }
    this.planned.set(record, number);
    return entry;
  }
}

/**
 * Action requests of every kind: creation, status changes, revocation, reading and listing.
 * What accepting means is up to the kind of request (see AcceptHandler).
 */
export class ActionRequests {
  readonly prefix: string;
  private readonly acceptors = new Map<string, AcceptHandler>();

  constructor(
    private readonly reads: StoreReader,
    private readonly writes: StoreWriter,
    readonly index: ActionRequestIndex,
    private readonly access: Authorizer,
    baseUrl: string,
  ) {
    this.prefix = `${baseUrl}/action-requests/`;
  }

  registerAcceptor(type: string, handler: AcceptHandler): void {
    this.acceptors.set(type, handler);
  }

  /**
   * `notifiesRequester`: the request's content asks for status notifications to the requester
   * (notifyRequestStatusChange).
   */
  newRecord(type: string, requestedBy: string, objects: string[], notifiesRequester = false): ActionRequestRecord {
    return {
      iri: `${this.prefix}${randomUUID()}`,
      type,
      requestedBy,
      requestedAt: new Date(),
      objects,
      statuses: [],
      ...(notifiesRequester ? { notifiesRequester: true as const } : {}),
    };
  }

  /** A RequestWrite into a new transaction. */
  write(): RequestWrite {
    return new RequestWrite(this.writes.begin(), this.writes.claims);
  }

  /** Commits `write`, then finishes what it left hot with a final status (`finishLater`). */
  async commit(write: RequestWrite): Promise<void> {
    await this.writes.commit(write.tx);
    if (write.toFinish.length > 0) await this.finishLater(write.toFinish);
  }

  /**
   * Finishes those of `records` still held in memory with a final status and no write of theirs in flight: a
   * ChangeRequest rejected by an accept while its own creation was being written, once the later of the two writes
   * settles. Best effort: one left hot by a failed commit is finished at the next start (`finishStored`).
   */
  private async finishLater(records: readonly ActionRequestRecord[]): Promise<void> {
    const due = records.filter(
      (r) => this.index.get(r.iri) === r && isFinal(r.type, currentStatus(r)) && !this.isBusy(r),
    );
    if (due.length === 0) return;
    const write = this.write();
    for (const record of due) write.finish(record);
    await this.writes.commit(write.tx).catch(() => undefined);
  }

  /**
   * Finishes every request held in memory with a final status, a few hundred per commit: those an earlier start
   * kept hot (data written before such requests were finished, or a follow-up finish that failed). Called at start.
   */
  async finishStored(): Promise<number> {
    const due = [...this.index.all()].filter((r) => isFinal(r.type, currentStatus(r)) && !this.isBusy(r));
    for (let i = 0; i < due.length; i += FINISHED_PER_COMMIT) {
      const write = this.write();
      for (const record of due.slice(i, i + FINISHED_PER_COMMIT)) write.finish(record);
      await this.writes.commit(write.tx);
    }
    return due.length;
  }

  /** True while a write in flight creates or changes the status of `record`. */
  isBusy(record: ActionRequestRecord): boolean {
    return this.writes.claims.isHeld(claimKey.request(record.iri));
  }

  async get(iri: string): Promise<ActionRequestRecord> {
    const record = this.index.get(iri) ?? (await this.reads.finishedRequest(iri));
    if (!record) throw notFound(iri, 'Action request not found');
    return record;
  }

  /** Every ChangeRequest about `object`, decided ones included, oldest first. */
  async changeRequestsOf(object: string): Promise<ActionRequestRecord[]> {
    return inRequestOrder(this.index.forObject(object), await this.reads.finishedRequests(object)).filter(
      (r) => r.type === api.ChangeRequest,
    );
  }

  /** A request the caller may read (requester, data holder, internal actors). */
  async readable(iri: string, caller: Caller): Promise<ActionRequestRecord> {
    const record = await this.get(iri);
    this.access.check(caller, { kind: 'read-action-request', request: record });
    return record;
  }

  /** 409 while another status change of the request is being written. */
  ensureIdle(record: ActionRequestRecord): void {
    if (this.isBusy(record))
      throw new HttpError(409, 'request_busy', {
        message: 'another status change of this action request is being written; retry',
        resource: record.iri,
      });
  }

  /** The stored triples of a request: its content, every status entry and error. */
  storedTriples(record: ActionRequestRecord): Promise<Quad[]> {
    return this.reads.graphTriples(record.iri);
  }

  /**
   * The request as clients see it: the current status as hasRequestStatus/Since on the request,
   * earlier ones as hasRequestStatusHistory entries, no bookkeeping.
   */
  async representation(record: ActionRequestRecord): Promise<Quad[]> {
    const current = record.statuses[record.statuses.length - 1].iri;
    const subject = namedNode(record.iri);
    const out: Quad[] = [];
    for (const t of await this.storedTriples(record)) {
      if (t.predicate.value.startsWith(STORE)) continue;
      if (t.subject.value !== current) out.push(withCurrentErrorDetailClass(t));
      else if (t.predicate.value === api.hasRequestStatus || t.predicate.value === api.hasRequestStatusSince)
        out.push(quad(subject, t.predicate, t.object));
    }
    for (const entry of record.statuses.slice(0, -1))
      out.push(quad(subject, namedNode(api.hasRequestStatusHistory), namedNode(entry.iri)));
    return withImpliedTypes(out);
  }

  /**
   * The action requests `caller` may read, held and finished: a partner's graphs in the SPARQL audit view (ONE Record
   * API, "Action Requests": the requester reads its own). Reads the finished ones' records, not their graphs.
   */
  async readableBy(caller: Caller): Promise<ActionRequestRecord[]> {
    const all = [...this.index.all(), ...(await this.reads.finishedRequests())];
    return all.filter((request) => this.access.allows(caller, { kind: 'read-action-request', request }));
  }

  /** GET /action-requests: internal actors only. */
  async list(caller: Caller, filter: ActionRequestFilter): Promise<ActionRequestRecord[]> {
    this.access.check(caller, { kind: 'list-action-requests' });
    const held = filter.object ? this.index.forObject(filter.object) : [...this.index.all()].sort(byRequestTime);
    // A finished request is never pending: the store is not asked for pending ones.
    const finished = filter.status === requestStatus.PENDING ? [] : await this.reads.finishedRequests(filter.object);
    return inRequestOrder(held, finished).filter(
      (r) => (!filter.type || r.type === filter.type) && (!filter.status || currentStatus(r) === filter.status),
    );
  }

  /**
   * PATCH /action-requests/{id}?status=…: the holder's decision, in effect when this resolves.
   * Asking for the status the request already has changes nothing (a client may accept a request
   * the `auto` policy already accepted); any other move out of a final status is 422. Revoking is
   * DELETE's (with its own rules on who may): a PATCH to REQUEST_REVOKED is 400.
   */
  async decide(iri: string, to: string, caller: Caller): Promise<ActionRequestRecord> {
    this.access.check(caller, { kind: 'decide-action-request' });
    if (!DECISIONS.includes(to))
      throw badQuery('status', 'status must be REQUEST_ACCEPTED, REQUEST_REJECTED or REQUEST_REVOKED');
    const record = await this.get(iri);
    const current = currentStatus(record);
    if (current === to) return record;
    if (to === requestStatus.REVOKED)
      throw badQuery('status', 'a request is revoked with DELETE /action-requests/{id}, not with PATCH');
    if (current !== requestStatus.PENDING) {
      throw new HttpError(422, 'not_pending', {
        message:
          `the request is already ${apiLocalName(current)}, a final status: it cannot become ${apiLocalName(to)} ` +
          '(only pending requests can be decided)',
        resource: iri,
      });
    }
    this.ensureIdle(record);
    const acceptor = this.acceptors.get(record.type);
    if (to === requestStatus.ACCEPTED && !acceptor)
      throw new HttpError(422, 'not_acceptable_here', {
        message: `${apiLocalName(record.type)}s cannot be accepted on this server`,
        resource: iri,
      });
    const write = this.write();
    write.hold(record);
    let refused: HttpError | undefined;
    try {
      if (to === requestStatus.ACCEPTED) refused = await acceptor!.accept(record, caller.agent, write);
      else write.transition(record, { to, by: caller.agent });
      await this.commit(write);
    } finally {
      // Settled by the commit; released here when the decision stopped before it.
      write.tx.release();
    }
    if (refused) throw refused;
    return record;
  }

  /** DELETE /action-requests/{id}: the requester or the holder withdraws a request. */
  async revoke(iri: string, caller: Caller): Promise<ActionRequestRecord> {
    const record = await this.get(iri);
    this.access.check(caller, { kind: 'revoke-action-request', request: record });
    const status = currentStatus(record);
    if (!(REVOCABLE[record.type] ?? []).includes(status)) {
      throw new HttpError(422, 'not_revocable', {
        message: `a ${apiLocalName(record.type)} that is ${apiLocalName(status)} cannot be revoked`,
        resource: iri,
      });
    }
    this.ensureIdle(record);
    const write = this.write();
    write.transition(record, { to: requestStatus.REVOKED, by: caller.agent, revoked: true });
    try {
      this.acceptors.get(record.type)?.revoked?.(write, record, caller.agent);
    } catch (err) {
      write.tx.release();
      throw err;
    }
    await this.commit(write);
    return record;
  }
}
