import { type Quad, triplesInGraphToNq } from '../rdf/terms.js';
import { latestGraph } from './schema/revisions.js';
import type { RevisionWrite } from './transaction.js';

/** The triples a new revision adds to its object's graph and removes from it. */
export interface RevisionDelta {
  added: readonly Quad[];
  removed: readonly Quad[];
}

/**
 * How a new revision changes its object's graph, which both backends change in place: the writer's
 * own account when it gives one (a Change: its cost is the change's, whatever the object's size),
 * else the two revisions compared. A change keeps the triple objects it does not touch: only the
 * others are compared, as N-Triples (each triple's kept form, see triplesInGraphToNq).
 */
export function revisionDelta(
  replaces: NonNullable<RevisionWrite['replaces']>,
  triples: readonly Quad[],
): RevisionDelta {
  if (replaces.added && replaces.removed) return { added: replaces.added, removed: replaces.removed };
  const previous = new Set(replaces.triples);
  const next = new Set(triples);
  const graph = latestGraph(replaces.revision.object);
  const byLine = (list: readonly Quad[]) => {
    const lines = triplesInGraphToNq(list, graph);
    return new Map(lines.map((line, i) => [line, list[i]]));
  };
  const added = byLine(triples.filter((t) => !previous.has(t)));
  const removed = byLine(replaces.triples.filter((t) => !next.has(t)));
  return {
    added: [...added].flatMap(([line, t]) => (removed.has(line) ? [] : [t])),
    removed: [...removed].flatMap(([line, t]) => (added.has(line) ? [] : [t])),
  };
}
