import type { Quad } from '../../../rdf/terms.js';
import { store as meta } from '../../../rdf/vocab.js';
import type { ArchiveDb } from './archive-db.js';
import { actionRequestFromTriples, type ActionRequestRecord } from '../../schema/action-requests.js';
import { readStoreNTriples } from '../../../rdf/ntriples.js';

/** What the domain keeps of a finished action request, dates as epoch ms. */
export type ArchivedRecord = Omit<ActionRequestRecord, 'requestedAt' | 'statuses'> & {
  requestedAt: number;
  statuses: { iri: string; number: number; status: string; since: number; changedBy: string }[];
};

/** The layout before records and graphs were kept apart: one value per request, compressed whole. */
export interface LegacyArchivedRequest {
  ntriples: string;
  record: ArchivedRecord;
}

export type RequestKey = string;
/** [request time (ms), request]: records in `byRequestTime` order (IRIs are ASCII: LMDB orders them as JS does). */
export type RequestByTimeKey = [requestedAt: number, graph: string];
/** [object, request time (ms), request]: a finished request listed under each object it concerns. */
export type RequestByObjectKey = [object: string, requestedAt: number, graph: string];

/** The databases of the request archive. */
export interface RequestDbs {
  /** Records by time: the unfiltered list reads them in order, without a graph. */
  records: ArchiveDb<RequestByTimeKey, ArchivedRecord>;
  /** Each request's time: its record's key. */
  times: ArchiveDb<RequestKey, number>;
  /** Each request's graph as N-Triples. */
  graphs: ArchiveDb<RequestKey, string>;
  byObject: ArchiveDb<RequestByObjectKey, 1>;
}

const toRecord = (record: ArchivedRecord): ActionRequestRecord => ({
  ...record,
  objects: [...record.objects],
  requestedAt: new Date(record.requestedAt),
  statuses: record.statuses.map((s) => ({ ...s, since: new Date(s.since) })),
});

const toArchived = (record: ActionRequestRecord): ArchivedRecord => ({
  ...record,
  requestedAt: record.requestedAt.getTime(),
  statuses: record.statuses.map((s) => ({ ...s, since: s.since.getTime() })),
});

/**
 * The lines the request's record is read from (the request node and its status entries), not the
 * Change and errors it also holds: parsing those would be most of the work. Lines are our own
 * N-Triples, so a line's subject is the text before its first space.
 */
function recordLines(iri: string, ntriples: string): string {
  const lines = ntriples.split('\n');
  const subject = `<${iri}>`;
  const entry = `${subject} <${meta.statusEntry}> `;
  const entries = new Set([subject]);
  for (const line of lines) if (line.startsWith(entry)) entries.add(line.slice(entry.length, line.lastIndexOf(' .')));
  return lines.filter((line) => entries.has(line.slice(0, line.indexOf(' ')))).join('\n');
}

/**
 * Finished action requests (those with a final status) on disk, out of the hot store: records (small, by time) apart
 * from graphs, so lists and filters read no graph; by IRI and by the objects they concern. Derived from journal
 * records (`finishedGraphsIn`), like the revisions.
 */
export class RequestArchive {
  constructor(private readonly dbs: RequestDbs) {}

  /**
   * Archives a finished request graph; false if it was there already (a replayed record). `created`:
   * the record finishing it also creates it (a new IRI), so it cannot be there, and LMDB is not asked.
   * `triples`: the graph's triples as its commit wrote them (the lines of `ntriples`), read instead of the text.
   */
  archive(graph: string, ntriples: string, created = false, triples?: readonly Quad[]): boolean {
    if (!created && this.dbs.times.has(graph)) return false;
    const record = actionRequestFromTriples(graph, triples ?? readStoreNTriples(recordLines(graph, ntriples)));
    if (!record) return false;
    this.put(toArchived(record), ntriples);
    return true;
  }

  /** Stores a request's record and graph under every key that finds it. */
  private put(record: ArchivedRecord, ntriples: string): void {
    const { iri, requestedAt } = record;
    this.dbs.records.put([requestedAt, iri], record);
    this.dbs.times.put(iri, requestedAt);
    this.dbs.graphs.put(iri, ntriples);
    for (const object of record.objects) this.dbs.byObject.put([object, requestedAt, iri], 1);
  }

  /** Stores requests archived in the older layout (Archive.splitLegacyRequests). */
  takeLegacy(legacy: Iterable<LegacyArchivedRequest>): void {
    for (const { record, ntriples } of legacy) this.put(record, ntriples);
  }

  has(iri: string): boolean {
    return this.dbs.times.has(iri);
  }

  request(iri: string): ActionRequestRecord | undefined {
    const requestedAt = this.dbs.times.get(iri);
    const record = requestedAt === undefined ? undefined : this.dbs.records.get([requestedAt, iri]);
    return record && toRecord(record);
  }

  /** Every finished request graph, written or being written. */
  graphs(): string[] {
    return this.dbs.times.keys();
  }

  /** A finished request graph as N-Triples ('' if the archive does not hold it). */
  ntriples(iri: string): string {
    return this.dbs.graphs.get(iri) ?? '';
  }

  triples(iri: string): Quad[] | undefined {
    const ntriples = this.dbs.graphs.get(iri);
    return ntriples === undefined ? undefined : readStoreNTriples(ntriples);
  }

  /**
   * The newest finished request about `object` older than `olderThan` (the newest of all without
   * it), as its index key (the graph is its last part); nothing else is read. Walking an object's
   * requests from the newest down costs one key read per request, however many it has.
   */
  newestAbout(
    object: string,
    olderThan: RequestByObjectKey = [object, Number.MAX_SAFE_INTEGER, ''],
  ): RequestByObjectKey | undefined {
    return this.dbs.byObject.keyBelow(olderThan, [object, 0, '']);
  }

  /** The finished requests about `object` (every one when absent), oldest first (`byRequestTime`): in key order. */
  list(object?: string): ActionRequestRecord[] {
    if (object === undefined)
      return this.dbs.records.range(undefined, undefined, () => true).map((e) => toRecord(e.value));
    return this.dbs.byObject
      .range([object, 0, ''], [object, Number.MAX_SAFE_INTEGER, ''], (key) => key[0] === object)
      .flatMap(({ key }) => {
        const record = this.dbs.records.get([key[1], key[2]]);
        return record ? [toRecord(record)] : [];
      });
  }
}
