import type { SparqlReader } from './graph-store.js';
import { iriToNt } from '../rdf/terms.js';
import { api, rdf, store as meta } from '../rdf/vocab.js';

/** What identifies an action request, read from its own graph (graph name = request IRI). */
export interface ActionRequestRow {
  request: string;
  type: string;
  requestedBy: string;
  requestedAt: string;
}

/** One status entry of an action request. */
export interface StatusRow {
  request: string;
  entry: string;
  number: number;
  status: string;
  since: string;
  changedBy: string;
}

/** All action requests, read once at start to rebuild the in-memory index. */
export function readActionRequestRows(index: SparqlReader): ActionRequestRow[] {
  const rows = index.select(`SELECT ?r ?type ?by ?at WHERE { GRAPH ?r {
    ?r ${iriToNt(rdf.type)} ?type ; ${iriToNt(api.isRequestedBy)} ?by ; ${iriToNt(api.isRequestedAt)} ?at } }`);
  return rows.results.bindings.map((b) => ({
    request: b.r.value,
    type: b.type.value,
    requestedBy: b.by.value,
    requestedAt: b.at.value,
  }));
}

/** The Logistics Objects each action request concerns (request, object) pairs. */
export function readConcernRows(index: SparqlReader): { request: string; object: string }[] {
  const rows = index.select(`SELECT ?r ?lo WHERE { GRAPH ?r { ?r ${iriToNt(meta.concerns)} ?lo } }`);
  return rows.results.bindings.map((b) => ({ request: b.r.value, object: b.lo.value }));
}

/** Every status entry of every action request. */
export function readStatusRows(index: SparqlReader): StatusRow[] {
  const rows = index.select(`SELECT ?r ?e ?n ?s ?since ?by WHERE { GRAPH ?r {
    ?r ${iriToNt(meta.statusEntry)} ?e . ?e ${iriToNt(meta.statusNumber)} ?n ; ${iriToNt(api.hasRequestStatus)} ?s ;
       ${iriToNt(api.hasRequestStatusSince)} ?since ; ${iriToNt(api.isChangedBy)} ?by } }`);
  return rows.results.bindings.map((b) => ({
    request: b.r.value,
    entry: b.e.value,
    number: Number(b.n.value),
    status: b.s.value,
    since: b.since.value,
    changedBy: b.by.value,
  }));
}
