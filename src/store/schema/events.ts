import { dateTimeLiteral, iriToNt, literal, namedNode, quad, xsdLiteral, type Quad } from '../../rdf/terms.js';
import { store as meta, xsd } from '../../rdf/vocab.js';
import type { SparqlReader } from '../readers.js';

/**
 * Logistics Event metadata, one entry per event in `urn:onerecord:store:events`: enough to find,
 * filter and page events without reading their graphs. Written in the same commit as the
 * event's graph; read back once at start to rebuild the event index.
 */
export interface EventRecord {
  iri: string;
  /** The Logistics Object the event is for. */
  object: string;
  /** Arrival order on this server, unique across all events. */
  sequence: number;
  /** When this server stored the event (its Last-Modified). */
  recordedAt: Date;
  /** cargo:creationDate in epoch milliseconds. */
  creationDate: number;
  /** cargo:eventDate in epoch milliseconds. */
  eventDate: number;
  createdBy: string;
  /** The event code as the event gives it: code-list IRIs and short codes. */
  codes: readonly string[];
}

/** The metadata quads of one event; dates are stored in UTC. */
export function eventQuads(record: EventRecord): Quad[] {
  const g = namedNode(meta.eventsGraph);
  const s = namedNode(record.iri);
  const date = (ms: number) => dateTimeLiteral(new Date(ms));
  return [
    quad(s, namedNode(meta.eventOf), namedNode(record.object), g),
    quad(s, namedNode(meta.eventSequence), xsdLiteral(record.sequence, xsd.integer), g),
    quad(s, namedNode(meta.eventRecordedAt), date(record.recordedAt.getTime()), g),
    quad(s, namedNode(meta.eventCreationDate), date(record.creationDate), g),
    quad(s, namedNode(meta.eventDate), date(record.eventDate), g),
    quad(s, namedNode(meta.eventCreatedBy), namedNode(record.createdBy), g),
    ...record.codes.map((code) => quad(s, namedNode(meta.eventCode), literal(code), g)),
  ];
}

/** One row of the metadata query; an event with several codes gives one row per code. */
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

/** Rows to records, one per event with all its codes, in arrival order. */
export function eventRecordsFromRows(rows: readonly EventRow[]): EventRecord[] {
  const records = new Map<string, EventRecord & { codes: string[] }>();
  for (const row of rows) {
    let record = records.get(row.event);
    if (!record) {
      record = {
        iri: row.event,
        object: row.object,
        sequence: row.sequence,
        recordedAt: new Date(row.recordedAt),
        creationDate: Date.parse(row.creationDate),
        eventDate: Date.parse(row.eventDate),
        createdBy: row.createdBy,
        codes: [],
      };
      records.set(row.event, record);
    }
    if (row.code !== undefined) record.codes.push(row.code);
  }
  return [...records.values()].sort((a, b) => a.sequence - b.sequence);
}

/** Every event's metadata, in arrival order. */
export async function readEvents(reader: SparqlReader): Promise<EventRecord[]> {
  const p = iriToNt;
  const rows = await reader.select(`SELECT ?e ?o ?seq ?rec ?cd ?ed ?by ?code WHERE { GRAPH ${p(meta.eventsGraph)} {
    ?e ${p(meta.eventOf)} ?o ; ${p(meta.eventSequence)} ?seq ; ${p(meta.eventRecordedAt)} ?rec ;
       ${p(meta.eventCreationDate)} ?cd ; ${p(meta.eventDate)} ?ed ; ${p(meta.eventCreatedBy)} ?by .
    OPTIONAL { ?e ${p(meta.eventCode)} ?code } } }`);
  return eventRecordsFromRows(
    rows.results.bindings.map((b) => ({
      event: b.e.value,
      object: b.o.value,
      sequence: Number(b.seq.value),
      recordedAt: b.rec.value,
      creationDate: b.cd.value,
      eventDate: b.ed.value,
      createdBy: b.by.value,
      code: b.code?.value,
    })),
  );
}
