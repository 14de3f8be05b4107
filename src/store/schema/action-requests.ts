import { dateTimeLiteral, iriToNt, namedNode, quad, xsdLiteral, type Quad } from '../../rdf/terms.js';
import { api, rdf, requestStatus, store as meta, xsd } from '../../rdf/vocab.js';
import type { SparqlReader } from '../readers.js';

/*
 * Action requests: one named graph per request, named after it, only ever added to. It holds
 * the request (type, requester, time, the objects it concerns, its own content such as a
 * Change) and one status entry per status change, numbered from 1 (REQUEST_PENDING).
 */

/** One status an action request had, from `since` until the next entry. */
export interface StatusEntry {
  /** `internal:` id of the api:RequestStatusEntry node. */
  iri: string;
  /** Position in the history, starting at 1 (REQUEST_PENDING at creation). */
  number: number;
  status: string;
  since: Date;
  changedBy: string;
}

/** What the server keeps in memory about an action request; its full content stays in the store. */
export interface ActionRequestRecord {
  iri: string;
  type: string;
  requestedBy: string;
  requestedAt: Date;
  /** The Logistics Objects the request concerns. */
  objects: string[];
  /** Ordered by number; the last one is the current status. */
  statuses: StatusEntry[];
  /**
   * Its requester asked for a notification at each status change (notifyRequestStatusChange of a Change or an
   * AccessDelegation).
   */
  notifiesRequester?: true;
}

/** What a status change records besides the entry itself (errors are the request's content, written by the domain). */
export interface StatusExtras {
  /** Sets isRevokedBy / isRevokedAt. */
  revoked?: boolean;
}

/** Oldest first; ties (same millisecond) by IRI, so the order survives a restart. */
export function byRequestTime(a: ActionRequestRecord, b: ActionRequestRecord): number {
  return a.requestedAt.getTime() - b.requestedAt.getTime() || (a.iri < b.iri ? -1 : a.iri > b.iri ? 1 : 0);
}

/**
 * Status entries in history order: by number, and the creation's REQUEST_PENDING first where an accept numbered its
 * rejection of a request being created as that request's first entry (both are kept).
 */
const byStatusNumber = (a: StatusEntry, b: StatusEntry): number =>
  a.number - b.number || Number(b.status === requestStatus.PENDING) - Number(a.status === requestStatus.PENDING);

/** A new request: its identifying triples plus `body` (the request's own content), in its graph. */
export function requestQuads(record: ActionRequestRecord, body: readonly Quad[]): Quad[] {
  const subject = namedNode(record.iri);
  const g = subject;
  return [
    quad(subject, namedNode(rdf.type), namedNode(record.type), g),
    quad(subject, namedNode(api.isRequestedBy), namedNode(record.requestedBy), g),
    quad(subject, namedNode(api.isRequestedAt), dateTimeLiteral(record.requestedAt), g),
    ...record.objects.map((o) => quad(subject, namedNode(meta.concerns), namedNode(o), g)),
    ...(record.notifiesRequester
      ? [quad(subject, namedNode(meta.notifiesRequester), xsdLiteral(true, xsd.boolean), g)]
      : []),
    ...body.map((t) => quad(t.subject, t.predicate, t.object, g)),
  ];
}

/** One status entry of `request`, with the revocation it records. */
export function statusEntryQuads(request: string, entry: StatusEntry, extras: StatusExtras = {}): Quad[] {
  const subject = namedNode(request);
  const g = subject;
  const node = namedNode(entry.iri);
  const out: Quad[] = [
    quad(subject, namedNode(meta.statusEntry), node, g),
    quad(node, namedNode(meta.statusNumber), xsdLiteral(entry.number, xsd.integer), g),
    quad(node, namedNode(api.hasRequestStatus), namedNode(entry.status), g),
    quad(node, namedNode(api.hasRequestStatusSince), dateTimeLiteral(entry.since), g),
    quad(node, namedNode(api.isChangedBy), namedNode(entry.changedBy), g),
  ];
  if (extras.revoked) {
    out.push(
      quad(subject, namedNode(api.isRevokedBy), namedNode(entry.changedBy), g),
      quad(subject, namedNode(api.isRevokedAt), dateTimeLiteral(entry.since), g),
    );
  }
  return out;
}

/**
 * Every action request with its status history, oldest first. Status entries of a request whose
 * creation never reached the store (a failed write) are left out, and so is a request without
 * any status entry.
 */
export async function readActionRequests(reader: SparqlReader): Promise<ActionRequestRecord[]> {
  const p = iriToNt;
  const records = new Map<string, ActionRequestRecord>();
  // isRequestedBy first: Oxigraph joins in the order written, and rdf:type is in every object's graph too.
  // Finished ones are left to the store (marked so on a SPARQL engine; in the archive of the embedded store).
  const open = `FILTER NOT EXISTS { GRAPH ${p(meta.finishedGraphs)} { ?r ${p(meta.finishedGraph)} ?done } }`;
  // Independent reads, sent together: on an engine each is a round trip, and a start waits for all of them.
  const [requests, concerns, notifying, statuses] = await Promise.all([
    reader.select(`SELECT ?r ?type ?by ?at WHERE { GRAPH ?r {
    ?r ${p(api.isRequestedBy)} ?by ; ${p(rdf.type)} ?type ; ${p(api.isRequestedAt)} ?at } ${open} }`),
    reader.select(`SELECT ?r ?lo WHERE { GRAPH ?r { ?r ${p(meta.concerns)} ?lo } ${open} }`),
    reader.select(`SELECT ?r WHERE { GRAPH ?r { ?r ${p(meta.notifiesRequester)} true } ${open} }`),
    reader.select(`SELECT ?r ?e ?n ?s ?since ?by WHERE { GRAPH ?r {
    ?r ${p(meta.statusEntry)} ?e . ?e ${p(meta.statusNumber)} ?n ; ${p(api.hasRequestStatus)} ?s ;
       ${p(api.hasRequestStatusSince)} ?since ; ${p(api.isChangedBy)} ?by } ${open} }`),
  ]);
  for (const b of requests.results.bindings) {
    records.set(b.r.value, {
      iri: b.r.value,
      type: b.type.value,
      requestedBy: b.by.value,
      requestedAt: new Date(b.at.value),
      objects: [],
      statuses: [],
    });
  }
  for (const b of concerns.results.bindings) records.get(b.r.value)?.objects.push(b.lo.value);
  for (const b of notifying.results.bindings) {
    const record = records.get(b.r.value);
    if (record) record.notifiesRequester = true;
  }
  const entries = statuses.results.bindings
    .map((b) => ({
      request: b.r.value,
      entry: {
        iri: b.e.value,
        number: Number(b.n.value),
        status: b.s.value,
        since: new Date(b.since.value),
        changedBy: b.by.value,
      },
    }))
    .sort((a, b) => byStatusNumber(a.entry, b.entry));
  for (const { request, entry } of entries) records.get(request)?.statuses.push(entry);
  return [...records.values()].filter((r) => r.statuses.length > 0).sort(byRequestTime);
}

/**
 * One request from the triples of its graph (a request kept outside the hot store); undefined without a status entry.
 */
export function actionRequestFromTriples(iri: string, triples: readonly Quad[]): ActionRequestRecord | undefined {
  const of = (subject: string, predicate: string) =>
    triples.filter((t) => t.subject.value === subject && t.predicate.value === predicate).map((t) => t.object.value);
  const [type] = of(iri, rdf.type);
  const [requestedBy] = of(iri, api.isRequestedBy);
  const [requestedAt] = of(iri, api.isRequestedAt);
  if (type === undefined || requestedBy === undefined || requestedAt === undefined) return undefined;
  const statuses: StatusEntry[] = [];
  for (const entry of of(iri, meta.statusEntry)) {
    const [n] = of(entry, meta.statusNumber);
    const [status] = of(entry, api.hasRequestStatus);
    const [since] = of(entry, api.hasRequestStatusSince);
    const [changedBy] = of(entry, api.isChangedBy);
    if (n === undefined || status === undefined || since === undefined || changedBy === undefined) continue;
    statuses.push({ iri: entry, number: Number(n), status, since: new Date(since), changedBy });
  }
  if (statuses.length === 0) return undefined;
  statuses.sort(byStatusNumber);
  return { iri, type, requestedBy, requestedAt: new Date(requestedAt), objects: of(iri, meta.concerns), statuses };
}
