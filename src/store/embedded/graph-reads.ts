import { readStoreNTriples } from '../../rdf/ntriples.js';
import type { Quad } from '../../rdf/terms.js';
import { latestGraph, revisionOfGraph } from '../schema/revisions.js';
import type { Archive } from './archive/archive.js';
import type { OxigraphIndex } from './oxigraph/oxigraph-index.js';

/**
 * A graph's triples, from the hot store or the archive, wherever the graph now is. A revision
 * graph is read from the hot store when it is the latest revision of its object (nothing in the
 * archive after it), else from the archive; a finished graph (a decided request, an event) from the archive, with
 * what a write added to it afterwards in the hot store.
 */
export function graphTriplesIn(index: OxigraphIndex, archive: Archive, graph: string): Quad[] {
  const revision = revisionOfGraph(graph);
  if (revision && !archive.revisions.has(revision.object, revision.number + 1)) {
    return archive.revisions.has(revision.object, revision.number)
      ? hotTriples(index, latestGraph(revision.object))
      : [];
  }
  if (revision) return archive.revisions.triples(revision.object, revision.number);
  const archived = archive.requests.triples(graph) ?? archive.events.triples(graph);
  if (!archived) return hotTriples(index, graph);
  const added = hotTriples(index, graph);
  return added.length > 0 ? [...archived, ...added] : archived;
}

function hotTriples(index: OxigraphIndex, graph: string): Quad[] {
  const text = index.graphNTriples(graph);
  return text ? readStoreNTriples(text) : [];
}
