import type { LogisticsObjectEntry, RevisionIndex } from './revision-index.js';

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
  /** The requested slice of them, most recently changed first. */
  page: LogisticsObjectEntry[];
  /** Objects per most specific type, over the whole index (what a type filter may pick from). */
  types: Record<string, number>;
}

/**
 * Logistics Objects from the in-memory revision index, most recently changed first, for the
 * operators' object list. One pass over the index and a sort of the matches: a listing costs
 * about as much as the number of objects, which is fine for an operator page, not for an API hot path.
 */
export function listObjects(index: RevisionIndex, filter: ObjectListFilter, skip: number, limit: number): ObjectList {
  const needle = filter.idContains?.toLowerCase();
  const after = filter.changedAfter?.getTime();
  const types: Record<string, number> = {};
  const matches: LogisticsObjectEntry[] = [];
  for (const entry of index.all()) {
    const { latest } = entry;
    types[latest.mostSpecificType] = (types[latest.mostSpecificType] ?? 0) + 1;
    if (filter.type !== undefined && latest.mostSpecificType !== filter.type) continue;
    if (needle !== undefined && !entry.iri.toLowerCase().includes(needle)) continue;
    if (after !== undefined && latest.createdAt.getTime() <= after) continue;
    matches.push(entry);
  }
  matches.sort((a, b) => b.latest.createdAt.getTime() - a.latest.createdAt.getTime() || (a.iri < b.iri ? -1 : 1));
  return { total: matches.length, page: matches.slice(skip, skip + limit), types };
}
