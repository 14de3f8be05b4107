import { randomUUID } from 'node:crypto';
import { Parser } from 'n3';
import type { AccessControl, Caller } from '../auth/access-control.js';
import { HttpError, badQuery, notFound } from '../errors.js';
import { dateTimeLiteral, namedNode, quad, xsdLiteral, type Quad } from '../rdf/terms.js';
import { API, INTERNAL_SCHEME, STORE, api, rdf, requestStatus, store as meta, xsd } from '../rdf/vocab.js';
import type { GraphStore } from '../store/graph-store.js';
import { apiErrorQuads, withCurrentErrorDetailClass } from './api-errors.js';
import { byRequestTime, currentStatus, type ActionRequestIndex, type ActionRequestRecord } from './action-request-index.js';

/** A status change to write: who made it, when, and what it records. */
export interface Transition {
  to: string;
  by: string;
  at?: Date;
  /** Stored as api:Error nodes in the request's hasError. */
  errors?: HttpError[];
  /** Sets isRevokedBy / isRevokedAt. */
  revoked?: boolean;
}

/** Accepting depends on the kind of request (a ChangeRequest applies its Change). */
export interface AcceptHandler {
  /** Accepts a pending request with no write in flight; throws the HttpError recorded when it ends rejected or failed. */
  accept(record: ActionRequestRecord, decidedBy: string): Promise<void>;
}

export interface ActionRequestFilter {
  status?: string;
  type?: string;
  object?: string;
}

const STATUS_BY_NAME = new Map(Object.values(requestStatus).map((iri) => [iri.slice(API.length), iri]));
const REQUEST_TYPES: readonly string[] = [api.ChangeRequest, api.AccessDelegationRequest, api.SubscriptionRequest];

/** The statuses PATCH /action-requests/{id}?status= may ask for. */
const DECISIONS: readonly string[] = [requestStatus.ACCEPTED, requestStatus.REJECTED, requestStatus.REVOKED];

/** Which statuses a request may be revoked from (DECISIONS "Action requests"). */
const REVOCABLE: Readonly<Record<string, readonly string[]>> = {
  [api.ChangeRequest]: [requestStatus.PENDING],
  [api.AccessDelegationRequest]: [requestStatus.PENDING, requestStatus.ACCEPTED],
  [api.SubscriptionRequest]: [requestStatus.PENDING, requestStatus.ACCEPTED],
};

/** The local name of an api: term given as `NAME`, `api:NAME` or the full IRI (`#` sent as `%23` or `/`). */
function apiLocalName(value: string): string {
  for (const prefix of [API, `${API.slice(0, -1)}/`, 'api:']) if (value.startsWith(prefix)) return value.slice(prefix.length);
  return value;
}

/** A RequestStatus from a query parameter: `REQUEST_ACCEPTED`, `ACCEPTED`, `api:REQUEST_ACCEPTED` or the IRI. */
export function parseRequestStatus(value: string, parameter: string): string {
  const name = apiLocalName(value.trim());
  const found = STATUS_BY_NAME.get(name) ?? STATUS_BY_NAME.get(`REQUEST_${name}`);
  if (!found) throw badQuery(parameter, `${parameter} must be one of ${[...STATUS_BY_NAME.keys()].join(', ')}`);
  return found;
}

export function parseRequestType(value: string, parameter: string): string {
  const iri = `${API}${apiLocalName(value.trim())}`;
  if (!REQUEST_TYPES.includes(iri)) throw badQuery(parameter, `${parameter} must be one of ${REQUEST_TYPES.map(apiLocalName).join(', ')}`);
  return iri;
}

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
  const typed = new Set(triples.filter((t) => t.predicate.value === rdf.type).map((t) => `${t.subject.value} ${t.object.value}`));
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
 * Creations and status changes of action requests that go into one durable commit. Every
 * request it touches counts it in `writes` until `release`, so no other status change of it
 * is planned meanwhile; the in-memory index changes only in `apply` (the commit's onApplied).
 * Everything is insert-only: a request's graph (named after it) gains one status entry per change.
 */
export class RequestWrite {
  readonly quads: Quad[] = [];
  private readonly effects: (() => void)[] = [];
  private readonly planned = new Map<ActionRequestRecord, number>();

  constructor(private readonly index: ActionRequestIndex) {}

  /** A new request: its identifying triples plus `body` (the request's own content). */
  create(record: ActionRequestRecord, body: Quad[]): void {
    // The request's node names its graph too.
    const subject = namedNode(record.iri);
    const g = subject;
    this.quads.push(
      quad(subject, namedNode(rdf.type), namedNode(record.type), g),
      quad(subject, namedNode(api.isRequestedBy), namedNode(record.requestedBy), g),
      quad(subject, namedNode(api.isRequestedAt), dateTimeLiteral(record.requestedAt), g),
      ...record.objects.map((o) => quad(subject, namedNode(meta.concerns), namedNode(o), g)),
      ...body.map((t) => quad(t.subject, t.predicate, t.object, g)),
    );
    this.mark(record);
    this.effects.push(() => this.index.add(record));
  }

  transition(record: ActionRequestRecord, t: Transition): void {
    const number = (this.planned.get(record) ?? record.statuses.length) + 1;
    const since = t.at ?? new Date();
    const entry = { iri: `${INTERNAL_SCHEME}${randomUUID()}`, number, status: t.to, since, changedBy: t.by };
    const subject = namedNode(record.iri);
    const g = subject;
    const node = namedNode(entry.iri);
    this.quads.push(
      quad(subject, namedNode(meta.statusEntry), node, g),
      quad(node, namedNode(meta.statusNumber), xsdLiteral(number, xsd.integer), g),
      quad(node, namedNode(api.hasRequestStatus), namedNode(t.to), g),
      quad(node, namedNode(api.hasRequestStatusSince), dateTimeLiteral(since), g),
      quad(node, namedNode(api.isChangedBy), namedNode(t.by), g),
    );
    for (const error of t.errors ?? []) {
      const errorIri = `${record.iri}/errors/${randomUUID()}`;
      this.quads.push(quad(subject, namedNode(api.hasError), namedNode(errorIri), g), ...apiErrorQuads(error, errorIri, g));
    }
    if (t.revoked) {
      this.quads.push(quad(subject, namedNode(api.isRevokedBy), namedNode(t.by), g), quad(subject, namedNode(api.isRevokedAt), dateTimeLiteral(since), g));
    }
    this.mark(record);
    this.planned.set(record, number);
    this.effects.push(() => this.index.addStatus(record, entry));
  }

  private mark(record: ActionRequestRecord): void {
    if (this.planned.has(record)) return;
    record.writes += 1;
    this.planned.set(record, record.statuses.length);
  }

  /** Updates the in-memory index; run it in the commit's onApplied. */
  apply(): void {
    for (const effect of this.effects) effect();
  }

  release(): void {
    for (const record of this.planned.keys()) record.writes -= 1;
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
    private readonly store: GraphStore,
    readonly index: ActionRequestIndex,
    private readonly access: AccessControl,
    private readonly holder: string,
    baseUrl: string,
  ) {
    this.prefix = `${baseUrl}/action-requests/`;
  }

  registerAcceptor(type: string, handler: AcceptHandler): void {
    this.acceptors.set(type, handler);
  }

  newRecord(type: string, requestedBy: string, objects: string[]): ActionRequestRecord {
    return { iri: `${this.prefix}${randomUUID()}`, type, requestedBy, requestedAt: new Date(), objects, statuses: [], writes: 0 };
  }

  write(): RequestWrite {
    return new RequestWrite(this.index);
  }

  /**
   * Commits `write` on its own, or through `via` when it must share a commit with other data
   * (a new revision); either way the index changes in the same tick as the store.
   */
  async commit(write: RequestWrite, via?: (insert: Quad[], onApplied: () => void) => Promise<unknown>): Promise<void> {
    try {
      if (via) await via(write.quads, () => write.apply());
      else await this.store.commit({ insert: write.quads }, () => write.apply());
    } finally {
      write.release();
    }
  }

  get(iri: string): ActionRequestRecord {
    const record = this.index.get(iri);
    if (!record) throw notFound(iri, 'Action request not found');
    return record;
  }

  /** Requester, data holder and internal actors may see a request. */
  canRead(caller: Caller, record: ActionRequestRecord): boolean {
    return caller.internal || caller.agent === this.holder || caller.agent === record.requestedBy;
  }

  readable(iri: string, caller: Caller): ActionRequestRecord {
    const record = this.get(iri);
    if (!this.canRead(caller, record)) throw this.access.denied(iri);
    return record;
  }

  /** 409 while another status change of the request is being written. */
  ensureIdle(record: ActionRequestRecord): void {
    if (record.writes > 0) throw new HttpError(409, 'request_busy', { message: 'another status change of this action request is being written; retry', resource: record.iri });
  }

  /** The stored triples of a request: its content, every status entry and error. */
  storedTriples(record: ActionRequestRecord): Quad[] {
    return new Parser({ format: 'application/n-triples' }).parse(this.store.graphNTriples(record.iri));
  }

  /**
   * The request as clients see it: the current status as hasRequestStatus/Since on the request,
   * earlier ones as hasRequestStatusHistory entries, no bookkeeping.
   */
  representation(record: ActionRequestRecord): Quad[] {
    const current = record.statuses[record.statuses.length - 1].iri;
    const subject = namedNode(record.iri);
    const out: Quad[] = [];
    for (const t of this.storedTriples(record)) {
      if (t.predicate.value.startsWith(STORE)) continue;
      if (t.subject.value !== current) out.push(withCurrentErrorDetailClass(t));
      else if (t.predicate.value === api.hasRequestStatus || t.predicate.value === api.hasRequestStatusSince) out.push(quad(subject, t.predicate, t.object));
    }
    for (const entry of record.statuses.slice(0, -1)) out.push(quad(subject, namedNode(api.hasRequestStatusHistory), namedNode(entry.iri)));
    return withImpliedTypes(out);
  }

  /** GET /action-requests: internal actors only. */
  list(caller: Caller, filter: ActionRequestFilter): ActionRequestRecord[] {
    this.access.requireInternal(caller, 'listing action requests');
    const source = filter.object ? this.index.forObject(filter.object) : [...this.index.all()].sort(byRequestTime);
    return source.filter((r) => (!filter.type || r.type === filter.type) && (!filter.status || currentStatus(r) === filter.status));
  }

  /**
   * PATCH /action-requests/{id}?status=…: the holder's decision, in effect when this resolves.
   * Asking for the status the request already has changes nothing (a client may accept a request
   * the `auto` policy already accepted); any other move out of a final status is 422. Revoking is
   * DELETE's (with its own rules on who may): a PATCH to REQUEST_REVOKED is 400.
   */
  async decide(iri: string, to: string, caller: Caller): Promise<ActionRequestRecord> {
    this.access.requireInternal(caller, 'deciding on action requests');
    if (!DECISIONS.includes(to)) throw badQuery('status', 'status must be REQUEST_ACCEPTED, REQUEST_REJECTED or REQUEST_REVOKED');
    const record = this.get(iri);
    const current = currentStatus(record);
    if (current === to) return record;
    if (to === requestStatus.REVOKED) throw badQuery('status', 'a request is revoked with DELETE /action-requests/{id}, not with PATCH');
    if (current !== requestStatus.PENDING) {
      throw new HttpError(422, 'not_pending', {
        message: `the request is already ${apiLocalName(current)}, a final status: it cannot become ${apiLocalName(to)} (only pending requests can be decided)`,
        resource: iri,
      });
    }
    this.ensureIdle(record);
    if (to === requestStatus.ACCEPTED) {
      const acceptor = this.acceptors.get(record.type);
      if (!acceptor) throw new HttpError(422, 'not_acceptable_here', { message: `${apiLocalName(record.type)}s cannot be accepted on this server`, resource: iri });
      await acceptor.accept(record, caller.agent);
    } else {
      const write = this.write();
      write.transition(record, { to, by: caller.agent });
      await this.commit(write);
    }
    return record;
  }

  /** DELETE /action-requests/{id}: the requester or the holder withdraws a request. */
  async revoke(iri: string, caller: Caller): Promise<ActionRequestRecord> {
    const record = this.readable(iri, caller);
    const status = currentStatus(record);
    if (!(REVOCABLE[record.type] ?? []).includes(status)) {
      throw new HttpError(422, 'not_revocable', { message: `a ${apiLocalName(record.type)} that is ${apiLocalName(status)} cannot be revoked`, resource: iri });
    }
    this.ensureIdle(record);
    const write = this.write();
    write.transition(record, { to: requestStatus.REVOKED, by: caller.agent, revoked: true });
    await this.commit(write);
    return record;
  }
}
