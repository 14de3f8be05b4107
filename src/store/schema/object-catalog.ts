import type { Quad } from '../../rdf/terms.js';
import type { RevisionRecord } from './revisions.js';

/** A Logistics Object as the catalog knows it: who created it and its latest revision. */
export interface CatalogObject {
  iri: string;
  /** Agent that created the object (revision 1). */
  creator: string;
  latest: RevisionRecord;
}

/** Which Logistics Objects a listing wants; every field narrows it. */
export interface ObjectListFilter {
  /** Most specific type (IRI). */
  type?: string;
  /** Part of the object's IRI, matched without regard to case. */
  idContains?: string;
  /** Latest revision written after this instant. */
  changedAfter?: Date;
}

/** How many objects a listing matches, and every object by type. */
export interface ObjectCounts {
  /** Objects matching the filter. */
  total: number;
  /** Objects per most specific type, over all objects (what a type filter may pick from). */
  types: Record<string, number>;
}

export interface ObjectList extends ObjectCounts {
  /** The requested slice of them, most recently changed first (ties by IRI). */
  page: CatalogObject[];
}

/**
 * The Logistics Objects a store holds, asked of the store itself: offered by a backend whose start does not publish
 * every object (the SPARQL engine: StoreReader.objectCatalog), so that a server process keeps only a bounded cache
 * of them (RevisionIndex).
 */
export interface ObjectCatalog {
  /** The object's creator and latest revision; undefined if the store holds no such object. */
  object(iri: string): Promise<CatalogObject | undefined>;
  /** As `object`, with the latest revision's triples read in the same request where the store can (a cold GET). */
  objectWithLatest(iri: string): Promise<{ object: CatalogObject; triples?: Quad[] } | undefined>;
  /** The objects `agent` created. */
  createdBy(agent: string): Promise<string[]>;
  /** A page of the objects matching `filter`, newest first (ties by IRI); `matches`: their count, if known. */
  page(filter: ObjectListFilter, skip: number, limit: number, matches?: number): Promise<CatalogObject[]>;
  /** How many objects match `filter`, and all by type: a count over every object (ListCounts keeps it). */
  counts(filter: ObjectListFilter): Promise<ObjectCounts>;
}
