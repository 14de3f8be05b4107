import {
  dateTimeLiteral,
  iriToNt,
  isValidIri,
  literal,
  namedNode,
  quad,
  xsdLiteral,
  type Quad,
} from '../../rdf/terms.js';
import { store as meta, xsd } from '../../rdf/vocab.js';
import { entryOf } from '../../map-entry.js';
import type { SparqlReader } from '../readers.js';

/**
 * Logistics Event metadata, one entry per event in `urn:onerecord:store:events`: enough to find,
 * filter and page events without reading their graphs. Written in the same commit as the
 * event's graph; read back per object, per event or per creator (StoredEvents).
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

/** Logistics Events' metadata as the domain reads it from the store (StoreReader.logisticsEvents). */
export interface StoredEvents {
  /** The events of `object`, in arrival order. */
  ofObject(object: string): Promise<EventRecord[]>;
  /** Those of `iris` that are stored. */
  withIris(iris: readonly string[]): Promise<EventRecord[]>;
  /** The events `agent` posted. */
  postedBy(agent: string): Promise<EventRecord[]>;
  /** The highest arrival number stored (0 when none). */
  lastSequence(): Promise<number>;
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

/** The records in metadata quads (`eventQuads` of any number of events), in arrival order. */
export function eventRecordsFromQuads(quads: readonly Quad[]): EventRecord[] {
  const rows = new Map<string, Partial<EventRow> & { codes: string[] }>();
  for (const q of quads) {
    const row = entryOf(rows, q.subject.value, () => ({ event: q.subject.value, codes: [] }));
    const value = q.object.value;
    if (q.predicate.value === meta.eventOf) row.object = value;
    else if (q.predicate.value === meta.eventSequence) row.sequence = Number(value);
    else if (q.predicate.value === meta.eventRecordedAt) row.recordedAt = value;
    else if (q.predicate.value === meta.eventCreationDate) row.creationDate = value;
    else if (q.predicate.value === meta.eventDate) row.eventDate = value;
    else if (q.predicate.value === meta.eventCreatedBy) row.createdBy = value;
    else if (q.predicate.value === meta.eventCode) row.codes.push(value);
  }
  const complete = [...rows.values()].filter((r): r is EventRow & { codes: string[] } =>
    [r.object, r.sequence, r.recordedAt, r.creationDate, r.eventDate, r.createdBy].every((v) => v !== undefined),
  );
  return eventRecordsFromRows(
    complete.flatMap(({ codes, ...row }) => (codes.length === 0 ? [row] : codes.map((code) => ({ ...row, code })))),
  );
}

const p = iriToNt;

/**
 * The events' metadata (those that `where`, a pattern on ?e, ?o and ?by, selects), in arrival order: how a store
 * that keeps the metadata graph as it is written (the SPARQL engine) answers StoredEvents.
 */
async function readEvents(reader: SparqlReader, where = ''): Promise<EventRecord[]> {
  const rows =
    await reader.select(`SELECT ?e ?o ?seq ?rec ?cd ?ed ?by ?code WHERE { ${where} GRAPH ${p(meta.eventsGraph)} {
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

/** StoredEvents read by SPARQL from the events' metadata graph. */
export class SparqlStoredEvents implements StoredEvents {
  constructor(private readonly reader: SparqlReader) {}

  ofObject(object: string): Promise<EventRecord[]> {
    return isValidIri(object) ? readEvents(this.reader, `VALUES ?o { ${p(object)} }`) : Promise.resolve([]);
  }

  withIris(iris: readonly string[]): Promise<EventRecord[]> {
    const valid = iris.filter(isValidIri);
    if (valid.length === 0) return Promise.resolve([]);
    return readEvents(this.reader, `VALUES ?e { ${valid.map(p).join(' ')} }`);
  }

  postedBy(agent: string): Promise<EventRecord[]> {
    return isValidIri(agent) ? readEvents(this.reader, `VALUES ?by { ${p(agent)} }`) : Promise.resolve([]);
  }

  /**
   * A number above every stored one, found without reading them (a MAX over the events graph grows with the events):
   * the clock in microseconds. Numbers are claimed one at a time from there, far fewer than one a microsecond, so a
   * later start begins above all an earlier one claimed. Processes whose clocks differ meet through the events the
   * feed brings them (EventIndex takes the highest number seen); until then events of the same moment may list in
   * either order, as they may today.
   */
  lastSequence(): Promise<number> {
    return Promise.resolve(Date.now() * 1000);
  }
}
