import type { CatalogObject, ObjectList, ObjectListFilter } from '../../store/schema/object-catalog.js';

/**
 * Logistics Objects held in memory, most recently changed first (ties by IRI), for the operators' object list. One
 * pass over them and a sort of the matches: a listing costs about as much as the number of objects, which is fine for
 * an operator page, not for an API hot path. The same answer as ObjectCatalog.list gives from a store.
 */
export function listObjects(
  objects: Iterable<CatalogObject>,
  filter: ObjectListFilter,
  skip: number,
  limit: number,
): ObjectList {
  const matching = matcher(filter);
  const types: Record<string, number> = {};
  const matches: CatalogObject[] = [];
  for (const entry of objects) {
    const type = entry.latest.mostSpecificType;
    types[type] = (types[type] ?? 0) + 1;
    if (matching(entry)) matches.push(entry);
  }
  matches.sort(newestFirst);
  return { total: matches.length, page: matches.slice(skip, skip + limit), types };
}

/** The object list's order: most recently changed first, ties by IRI (as ObjectCatalog.page). */
export const newestFirst = (a: CatalogObject, b: CatalogObject) =>
  b.latest.createdAt.getTime() - a.latest.createdAt.getTime() || (a.iri < b.iri ? -1 : a.iri > b.iri ? 1 : 0);

/** Whether an object matches `filter`, as ObjectCatalog.page selects. */
export function matcher(filter: ObjectListFilter): (entry: CatalogObject) => boolean {
  const needle = filter.idContains?.toLowerCase();
  const after = filter.changedAfter?.getTime();
  return (entry) =>
    (filter.type === undefined || entry.latest.mostSpecificType === filter.type) &&
    (needle === undefined || entry.iri.toLowerCase().includes(needle)) &&
    (after === undefined || entry.latest.createdAt.getTime() > after);
}
