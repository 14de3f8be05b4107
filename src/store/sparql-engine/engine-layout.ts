import { iriToNt, isValidIri, type Quad } from '../../rdf/terms.js';
import { api, store as meta } from '../../rdf/vocab.js';
import type { SparqlJsonResults, SparqlReader } from '../readers.js';
import { actionRequestFromTriples, type ActionRequestRecord } from '../schema/action-requests.js';
import type { RevisionRecord } from '../schema/revisions.js';

/*
 * What the engine backend keeps beyond the graphs every backend shares (src/store/schema): every
 * revision in its own graph (`revisionGraph`) with its metadata in the metadata graph, and a mark
 * on each graph a commit finished, in `finishedGraphs`. The embedded store keeps the same data,
 * the older revisions and finished graphs in its archive.
 */

const p = iriToNt;

/**
 * Rows of a query read in pages of at most PAGE_ROWS, in the order of `key` (a variable bound to one
 * value per row), each page after the last key of the one before: one answer for all could pass the
 * client's time limit and the engine's row limit (Virtuoso's `ResultSetMaxRows`, which cuts without
 * saying so) once the store holds many objects. `where` is a group graph pattern that binds `key`.
 */
async function* pagedRows(reader: SparqlReader, variables: string, where: string, key: string): AsyncGenerator<SparqlJsonResults['results']['bindings']> {
  for (let after: string | undefined; ; ) {
    const from = after === undefined ? '' : `FILTER (STR(?${key}) > ${JSON.stringify(after)})`;
    const rows = await reader.select(`SELECT ${variables} WHERE { ${where} ${from} } ORDER BY STR(?${key}) LIMIT ${PAGE_ROWS}`);
    const bindings = rows.results.bindings;
    if (bindings.length > 0) yield bindings;
    if (bindings.length < PAGE_ROWS) return;
    after = bindings[bindings.length - 1][key].value;
  }
}

/**
 * Rows of one page of a start-up read: Virtuoso's default row limits (ResultSetMaxRows,
 * MaxSortedTopRows). Measured on Virtuoso 7.2.5 with 100,000 revisions: 11 pages in 14.3 s, against
 * 20.5 s for one query of all (its JSON answer costs Virtuoso about 0.2 ms per row) and 23.1 s in
 * pages of 100,000.
 */
const PAGE_ROWS = 10_000;

/** Revision 1 and the latest revision of every object: what the revision index is rebuilt from. */
export async function readCreatedAndLatestRevisions(reader: SparqlReader): Promise<RevisionRecord[]> {
  const where = `GRAPH ${p(meta.metaGraph)} {
    ?g ${p(meta.revisionOf)} ?o ; ${p(meta.revisionNumber)} ?n ; ${p(meta.revisionCreatedAt)} ?at ; ${p(meta.revisionCreatedBy)} ?by ; ${p(meta.revisionType)} ?type }`;
  const first = new Map<string, RevisionRecord>();
  const latest = new Map<string, RevisionRecord>();
  for await (const page of pagedRows(reader, '?g ?o ?n ?at ?by ?type', where, 'g')) for (const b of page) {
    const r = { object: b.o.value, number: Number(b.n.value), graph: b.g.value, createdAt: new Date(b.at.value), createdBy: b.by.value, mostSpecificType: b.type.value };
    if (r.number === 1) first.set(r.object, r);
    if (r.number > (latest.get(r.object)?.number ?? 0)) latest.set(r.object, r);
  }
  const out = [...first.values()];
  for (const r of latest.values()) if (r.number > 1) out.push(r);
  return out.sort((a, b) => a.number - b.number);
}

/** The metadata of one revision. */
export async function readRevision(reader: SparqlReader, graph: string): Promise<RevisionRecord | undefined> {
  const rows = await reader.select(`SELECT ?o ?n ?at ?by ?type WHERE { GRAPH ${p(meta.metaGraph)} {
    ${p(graph)} ${p(meta.revisionOf)} ?o ; ${p(meta.revisionNumber)} ?n ; ${p(meta.revisionCreatedAt)} ?at ; ${p(meta.revisionCreatedBy)} ?by ; ${p(meta.revisionType)} ?type } } LIMIT 1`);
  const b = rows.results.bindings[0];
  return b && { object: b.o.value, number: Number(b.n.value), graph, createdAt: new Date(b.at.value), createdBy: b.by.value, mostSpecificType: b.type.value };
}

/** The finished action requests (about `object`, or all), read from their graphs in one query. */
export async function readFinishedRequests(reader: { triplesByGraph(where: string): Promise<Map<string, Quad[]>> }, object?: string): Promise<ActionRequestRecord[]> {
  if (object !== undefined && !isValidIri(object)) return [];
  const about = object === undefined ? '' : `GRAPH ?g { ?g ${p(meta.concerns)} ${p(object)} }`;
  const graphs = await reader.triplesByGraph(`GRAPH ${p(meta.finishedGraphs)} { ?g ${p(meta.finishedGraph)} ?done } ${about} GRAPH ?g { ?g ${p(api.isRequestedBy)} ?by }`);
  const records = [...graphs].map(([iri, triples]) => actionRequestFromTriples(iri, triples));
  return records.filter((r): r is ActionRequestRecord => r !== undefined);
}
