import { iriToNt, isValidIri, type Quad } from '../../rdf/terms.js';
import { api, STORE, store as meta } from '../../rdf/vocab.js';
import type { SparqlReader } from '../readers.js';
import { actionRequestFromTriples, type ActionRequestRecord } from '../schema/action-requests.js';
import type { RevisionRecord } from '../schema/revisions.js';

/*
 * What the engine backend keeps beyond the graphs every backend shares (src/store/schema): every
 * revision in its own graph (`revisionGraph`) with its metadata in the metadata graph, and a mark
 * on each graph a commit finished, in `finishedGraphs`. The embedded store keeps the same data,
 * the older revisions and finished graphs in its archive.
 */

const p = iriToNt;

/** Revision 1 and the latest revision of every object: what the revision index is rebuilt from. */
export async function readCreatedAndLatestRevisions(reader: SparqlReader): Promise<RevisionRecord[]> {
  const rows = await reader.select(`SELECT ?g ?o ?n ?at ?by ?type WHERE { GRAPH ${p(meta.metaGraph)} {
    ?g ${p(meta.revisionOf)} ?o ; ${p(meta.revisionNumber)} ?n ; ${p(meta.revisionCreatedAt)} ?at ; ${p(meta.revisionCreatedBy)} ?by ; ${p(meta.revisionType)} ?type } }`);
  const first = new Map<string, RevisionRecord>();
  const latest = new Map<string, RevisionRecord>();
  for (const b of rows.results.bindings) {
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

/** The graphs of the finished action requests (decided ChangeRequests): the marked graphs that are not the store's own. */
export async function readFinishedRequestGraphs(reader: SparqlReader): Promise<string[]> {
  const rows = await reader.select(`SELECT ?r WHERE { GRAPH ${p(meta.finishedGraphs)} { ?r ${p(meta.finishedGraph)} ?done } FILTER (!STRSTARTS(STR(?r), ${JSON.stringify(STORE)})) }`);
  return rows.results.bindings.map((b) => b.r.value);
}
