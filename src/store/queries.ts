import type { SparqlReader } from './graph-store.js';
import { iriToNt } from '../rdf/terms.js';
import { store as meta } from '../rdf/vocab.js';

/** One revision of a Logistics Object as recorded in the metadata graph. */
export interface RevisionRow {
  object: string;
  graph: string;
  number: number;
  createdAt: string;
  createdBy: string;
  typeHeader: string;
}

/** All revision metadata, used once at start to rebuild the in-memory revision index. */
export function readRevisionRows(index: SparqlReader): RevisionRow[] {
  const rows = index.select(`SELECT ?g ?o ?n ?at ?by ?type WHERE { GRAPH ${iriToNt(meta.metaGraph)} {
    ?g ${iriToNt(meta.revisionOf)} ?o ; ${iriToNt(meta.revisionNumber)} ?n ; ${iriToNt(meta.revisionCreatedAt)} ?at ;
       ${iriToNt(meta.revisionCreatedBy)} ?by ; ${iriToNt(meta.revisionTypeHeader)} ?type } }`);
  return rows.results.bindings.map((b) => ({
    object: b.o.value,
    graph: b.g.value,
    number: Number(b.n.value),
    createdAt: b.at.value,
    createdBy: b.by.value,
    typeHeader: b.type.value,
  }));
}
