import type { SparqlReader } from './graph-store.js';
import { iriToNt } from '../rdf/terms.js';
import { store as meta } from '../rdf/vocab.js';

/** One row of Logistics Event metadata; an event with several codes gives one row per code. */
export interface EventRow {
  event: string;
  object: string;
  sequence: number;
  recordedAt: string;
  creationDate: string;
  eventDate: string;
  createdBy: string;
  code?: string;
}

/** All event metadata, used once at start to rebuild the in-memory event index. */
export function readEventRows(index: SparqlReader): EventRow[] {
  const p = iriToNt;
  const rows = index.select(`SELECT ?e ?o ?seq ?rec ?cd ?ed ?by ?code WHERE { GRAPH ${p(meta.eventsGraph)} {
    ?e ${p(meta.eventOf)} ?o ; ${p(meta.eventSequence)} ?seq ; ${p(meta.eventRecordedAt)} ?rec ;
       ${p(meta.eventCreationDate)} ?cd ; ${p(meta.eventDate)} ?ed ; ${p(meta.eventCreatedBy)} ?by .
    OPTIONAL { ?e ${p(meta.eventCode)} ?code } } }`);
  return rows.results.bindings.map((b) => ({
    event: b.e.value,
    object: b.o.value,
    sequence: Number(b.seq.value),
    recordedAt: b.rec.value,
    creationDate: b.cd.value,
    eventDate: b.ed.value,
    createdBy: b.by.value,
    code: b.code?.value,
  }));
}
