import type { Quad } from '../../../rdf/terms.js';
import { store as meta } from '../../../rdf/vocab.js';
import type { ArchiveDb } from './archive-db.js';
import { actionRequestFromTriples, byRequestTime, type ActionRequestRecord } from '../../schema/action-requests.js';
import { readStoreNTriples } from '../../../rdf/ntriples.js';

/** A finished action request: its graph as N-Triples and what the domain keeps of it, dates as epoch ms. */
export interface ArchivedRequest {
  ntriples: string;
  record: Omit<ActionRequestRecord, 'requestedAt' | 'statuses'> & {
    requestedAt: number;
    statuses: { iri: string; number: number; status: string; since: number; changedBy: string }[];
  };
}

export type RequestKey = string;
/** [object, request time (ms), request]: a finished request listed under each object it concerns. */
export type RequestByObjectKey = [object: string, requestedAt: number, graph: string];

const toRecord = ({ record }: ArchivedRequest): ActionRequestRecord => ({
  ...record,
  objects: [...record.objects],
  requestedAt: new Date(record.requestedAt),
  statuses: record.statuses.map((s) => ({ ...s, since: new Date(s.since) })),
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
 * Finished action requests (decided ChangeRequests) on disk, out of the hot store: by IRI and by
 * the objects they concern. Derived from journal records (`finishedGraphsIn`), like the revisions.
 */
export class RequestArchive {
  constructor(
    private readonly requests: ArchiveDb<RequestKey, ArchivedRequest>,
    private readonly byObject: ArchiveDb<RequestByObjectKey, 1>,
  ) {}

  /**
   * Archives a finished request graph; false if it was there already (a replayed record). `created`:
   * the record finishing it also creates it (a new IRI), so it cannot be there, and LMDB is not asked.
   * `triples`: the graph's triples as its commit wrote them (the lines of `ntriples`), read instead of the text.
   */
  archive(graph: string, ntriples: string, created = false, triples?: readonly Quad[]): boolean {
    if (!created && this.requests.has(graph)) return false;
    const record = actionRequestFromTriples(graph, triples ?? readStoreNTriples(recordLines(graph, ntriples)));
    if (!record) return false;
    const requestedAt = record.requestedAt.getTime();
    this.requests.put(graph, {
      ntriples,
      record: { ...record, requestedAt, statuses: record.statuses.map((s) => ({ ...s, since: s.since.getTime() })) },
    });
    for (const object of record.objects) this.byObject.put([object, requestedAt, graph], 1);
    return true;
  }

  has(iri: string): boolean {
    return this.requests.has(iri);
  }

  request(iri: string): ActionRequestRecord | undefined {
    const entry = this.requests.get(iri);
    return entry && toRecord(entry);
  }

  /** Every finished request graph, written or being written. */
  graphs(): string[] {
    return this.requests.keys();
  }

  /** A finished request graph as N-Triples ('' if the archive does not hold it). */
  ntriples(iri: string): string {
    return this.requests.get(iri)?.ntriples ?? '';
  }

  triples(iri: string): Quad[] | undefined {
    const entry = this.requests.get(iri);
    return entry && readStoreNTriples(entry.ntriples);
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
    return this.byObject.keyBelow(olderThan, [object, 0, '']);
  }

  /** The finished requests about `object` (every one when absent), oldest first. */
  list(object?: string): ActionRequestRecord[] {
    if (object === undefined)
      return this.requests
        .range(undefined, undefined, () => true)
        .map(({ value }) => toRecord(value))
        .sort(byRequestTime);
    return this.byObject
      .range([object, 0, ''], [object, Number.MAX_SAFE_INTEGER, ''], (key) => key[0] === object)
      .flatMap(({ key }) => this.request(key[2]) ?? [])
      .sort(byRequestTime);
  }
}
