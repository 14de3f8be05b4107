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

export interface ObjectList {
  /** Objects matching the filter. */
  total: number;
  /** The requested slice of them, most recently changed first (ties by IRI). */
  page: CatalogObject[];
  /** Objects per most specific type, over all objects (what a type filter may pick from). */
  types: Record<string, number>;
}

/**
 * The Logistics Objects a store holds, asked of the store itself: offered by a backend whose start does not publish
 * every object (the SPARQL engine: StoreReader.objectCatalog), so that a server process keeps only a bounded cache
 * of them (RevisionIndex).
 */
export interface ObjectCatalog {
  /** The object's creator and latest revision; undefined if the store holds no such object. */
  object(iri: string): Promise<CatalogObject | undefined>;
  /** The objects `agent` created. */
  createdBy(agent: string): Promise<string[]>;
  /** The objects matching `filter`, most recently changed first: how many, a page of them, and all by type. */
  list(filter: ObjectListFilter, skip: number, limit: number): Promise<ObjectList>;
}
