import { dateTimeLiteral, namedNode, quad, xsdLiteral, type Quad } from '../rdf/terms.js';
import { store as meta, xsd } from '../rdf/vocab.js';
import type { RevisionRow } from '../store/queries.js';

export interface RevisionInfo {
  number: number;
  /** Named graph that holds this revision's triples; it never changes once written. */
  graph: string;
  createdAt: Date;
  createdBy: string;
  /** Most specific type of the object at this revision (the `Type` header). */
  typeHeader: string;
}

export interface LogisticsObjectEntry {
  iri: string;
  /** Agent that created the object (revision 1). */
  creator: string;
  /** Ordered by number, starting at 1. */
  revisions: RevisionInfo[];
}

export const revisionGraph = (objectIri: string, revision: number) => `${objectIri}?revision=${revision}`;

/** The metadata quads of one revision, written in the same commit as its graph. */
export function revisionMetadataQuads(objectIri: string, info: RevisionInfo): Quad[] {
  const g = namedNode(meta.metaGraph);
  const subject = namedNode(info.graph);
  return [
    quad(subject, namedNode(meta.revisionOf), namedNode(objectIri), g),
    quad(subject, namedNode(meta.revisionNumber), xsdLiteral(info.number, xsd.integer), g),
    quad(subject, namedNode(meta.revisionCreatedAt), dateTimeLiteral(info.createdAt), g),
    quad(subject, namedNode(meta.revisionCreatedBy), namedNode(info.createdBy), g),
    quad(subject, namedNode(meta.revisionTypeHeader), namedNode(info.typeHeader), g),
  ];
}

/**
 * In-memory index of Logistics Objects and their revisions, derived from the metadata graph.
 * Latest lookups are O(1) and `at` lookups a binary search, whatever the number of revisions.
 * Reservations let a writer claim an id or a revision number synchronously, before the await
 * on the journal, so concurrent writers see each other.
 */
export class RevisionIndex {
  private readonly entries = new Map<string, LogisticsObjectEntry>();
  private readonly reserved = new Set<string>();

  static fromRows(rows: RevisionRow[]): RevisionIndex {
    const index = new RevisionIndex();
    rows.sort((a, b) => a.number - b.number);
    for (const row of rows) {
      index.addRevision(row.object, {
        number: row.number,
        graph: row.graph,
        createdAt: new Date(row.createdAt),
        createdBy: row.createdBy,
        typeHeader: row.typeHeader,
      });
    }
    return index;
  }

  get size(): number {
    return this.entries.size;
  }

  get(iri: string): LogisticsObjectEntry | undefined {
    return this.entries.get(iri);
  }

  latest(entry: LogisticsObjectEntry): RevisionInfo {
    return entry.revisions[entry.revisions.length - 1];
  }

  /** True if the id is taken or being taken by a write in flight. */
  isTaken(iri: string): boolean {
    return this.entries.has(iri) || this.reserved.has(iri);
  }

  /** Claims `key` (an object id or an object-revision pair); false if already claimed. */
  reserve(key: string): boolean {
    if (this.reserved.has(key)) return false;
    this.reserved.add(key);
    return true;
  }

  release(key: string): void {
    this.reserved.delete(key);
  }

  addRevision(objectIri: string, info: RevisionInfo): void {
    let entry = this.entries.get(objectIri);
    if (!entry) {
      entry = { iri: objectIri, creator: info.createdBy, revisions: [] };
      this.entries.set(objectIri, entry);
    }
    entry.revisions.push(info);
  }

  /** The revision valid at `instant`, or undefined if the object did not exist yet. */
  revisionAt(entry: LogisticsObjectEntry, instant: Date): RevisionInfo | undefined {
    const t = instant.getTime();
    let lo = 0;
    let hi = entry.revisions.length - 1;
    let found: RevisionInfo | undefined;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (entry.revisions[mid].createdAt.getTime() <= t) {
        found = entry.revisions[mid];
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
    return found;
  }
}
