import { ntriplesInGraph } from '../../../rdf/ntriples.js';
import { store as bookkeeping } from '../../../rdf/vocab.js';
import { quadToNq } from '../../../rdf/terms.js';
import { readRevisions, revisionQuads, type RevisionRecord } from '../../schema/revisions.js';
import type { WriteTransaction } from '../../transaction.js';
import type { Archive } from '../archive/archive.js';
import type { RequestByObjectKey } from '../archive/request-archive.js';
import type { OxigraphIndex } from '../oxigraph/oxigraph-index.js';
import type { ReplicaSource } from './replica-copy.js';
import { replicaGraph, viewsMayShow } from './replica-layout.js';

/** Whether a commit writes anything a SPARQL view may show: only such commits reach the replica (`subscribeData`). */
export const forViews = (tx: WriteTransaction) =>
  tx.revisions.length > 0 ||
  tx.finished.some(viewsMayShow) ||
  tx.insert.some((q) => viewsMayShow(q.graph.value)) ||
  tx.delete.some((q) => viewsMayShow(q.graph.value));

/** What the replica's copy reads of the store besides its hot index and archive. */
export interface ReplicaSourceState {
  closing: () => boolean;
  /**
   * The revisions start read, if nothing was written since, handed over once: the metadata is then not parsed again.
   */
  takeUnchangedRevisions: () => RevisionRecord[] | undefined;
}

/**
 * What a new SPARQL replica copies: the hot store's graphs that a view shows (objects' latest
 * graphs, pending action requests, grants, the metadata graph naming the objects), every event from the archive, and
 * the newest history from the archive (replicaHistory), which it stops reading at its bound.
 */
export function replicaSource(index: OxigraphIndex, archive: Archive, state: ReplicaSourceState): ReplicaSource {
  const { closing } = state;
  return {
    copy: () => {
      // The metadata graph, read once: it names the objects and their latest revisions, and the replica takes it as it
      // is.
      const meta = index.graphNTriples(bookkeeping.metaGraph);
      const unchanged = state.takeUnchangedRevisions();
      // Read from the metadata as it was when the copy began, in the later turn that lists the graphs.
      let latest: Map<string, number> | undefined;
      const latestRevisions = (): ReadonlyMap<string, number> => {
        if (latest) return latest;
        latest = new Map();
        for (const r of unchanged ?? readRevisions({ graphNTriples: () => meta }))
          latest.set(r.object, Math.max(r.number, latest.get(r.object) ?? 0));
        return latest;
      };
      const shown = (graph: string) => latestRevisions().has(graph) || replicaGraph(graph, () => false) !== undefined;
      return {
        meta: ntriplesInGraph(meta, bookkeeping.metaGraph),
        hotGraphs: () =>
          closing()
            ? []
            : [
                ...index.listGraphs().filter((graph) => graph !== bookkeeping.metaGraph && shown(graph)),
                ...archive.events.graphNames(),
              ],
        history: replicaHistory(latestRevisions, archive, closing),
      };
    },
    // Events are in the archive only; the replica shows them all, as the events view did when they were hot.
    graphNTriples: (graph) => (closing() ? '' : index.graphNTriples(graph) || archive.events.ntriples(graph)),
  };
}

/**
 * The archived history a new replica copies, newest first, round after round (the next older revision and
 * finished request of each object), so wherever the replica's bound stops the copy every object has about as
 * much history; read lazily, nothing once the store closes (docs/storage.md, "The revision archive").
 * `latestRevisions`: those of the metadata read when the copy began; later ones are found in the archive.
 */
function* replicaHistory(
  latestRevisions: () => ReadonlyMap<string, number>,
  archive: Archive,
  closing: () => boolean,
): Generator<string> {
  const latest = latestRevisions();
  const newest = new Map<string, number>();
  // Per object, the last request taken (null: none left): reading the object's whole list each
  // round would make the copy quadratic in its requests.
  const lastRequest = new Map<string, RequestByObjectKey | null>();
  const copied = new Set<string>();
  for (let round = 0; ; round++) {
    let more = false;
    for (const [object, known] of latest) {
      if (closing()) return;
      let number = newest.get(object);
      if (number === undefined) {
        for (number = known; archive.revisions.has(object, number + 1); number++);
        newest.set(object, number);
      }
      if (number - 1 - round >= 1) {
        more = true;
        const revision = archive.revisions.revision(object, number - 1 - round);
        if (revision)
          yield ntriplesInGraph(archive.revisions.ntriples(object, revision.number), revision.graph) +
            revisionQuads(revision).map(quadToNq).join('');
      }
      const before = lastRequest.get(object);
      if (before === null) continue;
      const key = archive.requests.newestAbout(object, before);
      lastRequest.set(object, key ?? null);
      if (key === undefined) continue;
      more = true;
      const request = key[2];
      if (copied.has(request)) continue;
      copied.add(request);
      yield ntriplesInGraph(archive.requests.ntriples(request), request);
    }
    if (!more) return;
  }
}
