import { iriToNt, isValidIri, type Quad } from '../../rdf/terms.js';
import { api, store as meta } from '../../rdf/vocab.js';
import type { SparqlReader } from '../readers.js';
import { actionRequestFromTriples, byRequestTime, type ActionRequestRecord } from '../schema/action-requests.js';
import type { RevisionRecord } from '../schema/revisions.js';

/*
 * What the engine backend keeps beyond the graphs every backend shares (src/store/schema): every
 * revision in its own graph (`revisionGraph`) with its metadata in the metadata graph, and a mark
 * on each graph a commit finished, in `finishedGraphs`. The embedded store keeps the same data,
 * the older revisions and finished graphs in its archive.
 */

const p = iriToNt;

/** The metadata of one revision. */
export async function readRevision(reader: SparqlReader, graph: string): Promise<RevisionRecord | undefined> {
  const rows = await reader.select(`SELECT ?o ?n ?at ?by ?type WHERE { GRAPH ${p(meta.metaGraph)} {
    ${p(graph)} ${p(meta.revisionOf)} ?o ; ${p(meta.revisionNumber)} ?n ; ${p(meta.revisionCreatedAt)} ?at ;
       ${p(meta.revisionCreatedBy)} ?by ; ${p(meta.revisionType)} ?type } } LIMIT 1`);
  const b = rows.results.bindings[0];
  return (
    b && {
      object: b.o.value,
      number: Number(b.n.value),
      graph,
      createdAt: new Date(b.at.value),
      createdBy: b.by.value,
      mostSpecificType: b.type.value,
    }
  );
}

/** The finished action requests (about `object`, or all), oldest first, read from their graphs in one query. */
export async function readFinishedRequests(
  reader: { triplesByGraph(where: string): Promise<Map<string, Quad[]>> },
  object?: string,
): Promise<ActionRequestRecord[]> {
  if (object !== undefined && !isValidIri(object)) return [];
  const about = object === undefined ? '' : `GRAPH ?g { ?g ${p(meta.concerns)} ${p(object)} }`;
  const graphs = await reader.triplesByGraph(
    `GRAPH ${p(meta.finishedGraphs)} { ?g ${p(meta.finishedGraph)} ?done } ${about} GRAPH ?g { ?g ` +
      `${p(api.isRequestedBy)} ?by }`,
  );
  const records = [...graphs].map(([iri, triples]) => actionRequestFromTriples(iri, triples));
  return records.filter((r): r is ActionRequestRecord => r !== undefined).sort(byRequestTime);
}
