import { readStoreNTriples, ntriplesInGraph } from '../../../rdf/ntriples.js';
import { quadToNq, type Quad } from '../../../rdf/terms.js';
import { store as bookkeeping } from '../../../rdf/vocab.js';
import type { StoredEvents } from '../../graph-store.js';
import { eventQuads, eventRecordsFromQuads, type EventRecord } from '../../schema/events.js';
import type { WriteTransaction } from '../../transaction.js';
import type { ArchiveDb } from './archive-db.js';
import type { FinishedGraph } from '../../schema/finished-graphs.js';

/** [object, arrival number]: an object's events in arrival order. */
export type EventKey = [object: string, sequence: number];
/** An event's metadata, the part its key does not give; dates as epoch ms. */
export type ArchivedEventRecord = Omit<EventRecord, 'object' | 'sequence' | 'recordedAt'> & { recordedAt: number };
/** [creator, object, arrival number]: the events an agent posted. */
export type EventByAgentKey = [agent: string, object: string, sequence: number];

/** The `event-ids` entry holding the highest arrival number archived (no IRI has a space). */
const LAST = ' last';
const HIGHEST = Number.MAX_SAFE_INTEGER;

/**
 * Marks the events `tx` appends as finished and created: an event never changes, so its graph and its metadata (in the
 * events graph) go to the archive as the record's archive lines, never to the hot store.
 */
export function finishAppendedEvents(tx: WriteTransaction): void {
  let appended = false;
  for (const e of tx.events) {
    if (e.kind !== 'event-appended') continue;
    appended = true;
    tx.finished.push(e.event.iri);
    tx.created.add(e.event.iri);
  }
  if (!appended) return;
  tx.finished.push(bookkeeping.eventsGraph);
  tx.created.add(bookkeeping.eventsGraph);
}

/**
 * Old layout: `tx` moves events the hot store holds to the archive: `metadata` (their quads in the events graph)
 * leaves the hot store and comes back as archive lines, and their `graphs` are finished.
 */
export function moveEventsOut(tx: WriteTransaction, metadata: readonly Quad[], graphs: readonly string[]): void {
  tx.delete.push(...metadata);
  tx.insert.push(...metadata);
  tx.finished.push(...graphs, bookkeeping.eventsGraph);
  // Not read whole from the hot store: only these events' metadata leaves it.
  tx.created.add(bookkeeping.eventsGraph);
}

/**
 * Logistics Events on disk, never in the hot store: each event's metadata under [object, arrival number] (a list reads
 * no graph), its graph by IRI, its key by IRI and by creator. Derived from journal records like the rest of the
 * archive: a record's archive lines of the events graph are the metadata of the events whose graphs it carries.
 */
export class EventArchive implements StoredEvents {
  constructor(
    private readonly records: ArchiveDb<EventKey, ArchivedEventRecord>,
    private readonly graphs: ArchiveDb<string, string>,
    private readonly ids: ArchiveDb<string, EventKey>,
    private readonly byAgent: ArchiveDb<EventByAgentKey, 1>,
  ) {}

  /**
   * Archives the events whose metadata is `metadata` (the events graph's lines of a record) with their graphs among
   * `finished`; returns the graphs that are events. An event archived already (a replayed record) is left as it is.
   */
  archive(metadata: FinishedGraph, finished: readonly FinishedGraph[]): Set<string> {
    const records = eventRecordsFromQuads(metadata.triples ?? readStoreNTriples(metadata.ntriples));
    const graphs = new Map(finished.map((f) => [f.graph, f]));
    let last = 0;
    for (const record of records) {
      const graph = graphs.get(record.iri);
      if (!graph || (!graph.created && this.ids.has(record.iri))) continue;
      const key: EventKey = [record.object, record.sequence];
      const { object, sequence, recordedAt, ...rest } = record;
      this.records.put(key, { ...rest, codes: [...rest.codes], recordedAt: recordedAt.getTime() });
      this.graphs.put(record.iri, graph.ntriples);
      this.ids.put(record.iri, key);
      this.byAgent.put([record.createdBy, object, sequence], 1);
      last = Math.max(last, sequence);
    }
    if (last > (this.ids.get(LAST)?.[1] ?? 0)) this.ids.put(LAST, ['', last]);
    return new Set(records.map((r) => r.iri).filter((iri) => graphs.has(iri)));
  }

  async ofObject(object: string): Promise<EventRecord[]> {
    return this.records
      .range([object, 0], [object, HIGHEST], (key) => key[0] === object)
      .map(({ key, value }) => toRecord(key, value));
  }

  async withIris(iris: readonly string[]): Promise<EventRecord[]> {
    return iris.flatMap((iri) => {
      const record = this.record(iri);
      return record ? [record] : [];
    });
  }

  async postedBy(agent: string): Promise<EventRecord[]> {
    return this.byAgent
      .keysIn([agent, '', 0], [`${agent}\u0000`, '', 0], (key) => key[0] === agent)
      .flatMap(([, object, sequence]) => {
        const value = this.records.get([object, sequence]);
        return value ? [toRecord([object, sequence], value)] : [];
      });
  }

  async lastSequence(): Promise<number> {
    return this.ids.get(LAST)?.[1] ?? 0;
  }

  /** An archived event's graph as N-Triples ('' if the archive does not hold it). */
  ntriples(iri: string): string {
    return this.graphs.get(iri) ?? '';
  }

  /** An archived event's graph; undefined if the archive does not hold it. */
  triples(iri: string): Quad[] | undefined {
    const ntriples = this.graphs.get(iri);
    return ntriples === undefined ? undefined : readStoreNTriples(ntriples);
  }

  /** Every archived event's IRI, written or being written. */
  graphNames(): string[] {
    return this.graphs.keys();
  }

  /** Every archived event as N-Quads of its graph and its metadata (for exports, with nothing written meanwhile). */
  *nquads(): Generator<string> {
    for (const { key: iri, value: ntriples } of this.graphs.all()) {
      const record = this.record(iri);
      yield ntriplesInGraph(ntriples, iri) + (record ? eventQuads(record).map(quadToNq).join('') : '');
    }
  }

  private record(iri: string): EventRecord | undefined {
    const key = this.ids.get(iri);
    const value = key && this.records.get(key);
    return key && value ? toRecord(key, value) : undefined;
  }
}

const toRecord = ([object, sequence]: EventKey, value: ArchivedEventRecord): EventRecord => ({
  ...value,
  object,
  sequence,
  recordedAt: new Date(value.recordedAt),
});
