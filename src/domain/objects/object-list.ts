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
  const needle = filter.idContains?.toLowerCase();
  const after = filter.changedAfter?.getTime();
  const types: Record<string, number> = {};
  const matches: CatalogObject[] = [];
  for (const entry of objects) {
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
