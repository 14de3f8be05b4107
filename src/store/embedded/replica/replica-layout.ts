import { STORE, store as bookkeeping } from '../../../rdf/vocab.js';
import type { View } from '../../query-service.js';
import { revisionOfGraph } from '../../schema/revisions.js';

/**
 * What a graph of the main store is to the replica: the latest graph of an object (named after
 * the object, changed in place as in the hot store), an event, an action request or grant, a
 * revision of the history window, the revision metadata; undefined: a graph no view shows.
 */
export type ReplicaGraph =
  | { kind: 'object' }
  | { kind: 'event' }
  | { kind: 'audit' }
  | { kind: 'revision'; object: string; number: number }
  | { kind: 'meta' };

/** Its kind; `isObject` tells the latest graphs of objects (named after the object) from the others. */
export function replicaGraph(graph: string, isObject: (graph: string) => boolean): ReplicaGraph | undefined {
  if (graph === bookkeeping.metaGraph) return { kind: 'meta' };
  if (isObject(graph)) return { kind: 'object' };
  const revision = revisionOfGraph(graph);
  if (revision) return { kind: 'revision', ...revision };
  if (graph.includes('/logistics-events/')) return { kind: 'event' };
  if (graph.includes('/action-requests/') || graph.includes('/internal/acl/')) return { kind: 'audit' };
  return undefined;
}

/**
 * Whether a view may show anything of `graph`: every graph but the store's own bookkeeping
 * (`urn:onerecord:store:`: outbox, delivery positions, dead letters, received notifications, moves,
 * event index...), of which the replica reads the revision metadata only. A commit that writes no
 * such graph (and no revision) is not the replica's to apply (DurableStore.commit).
 */
export const viewsMayShow = (graph: string): boolean => !graph.startsWith(STORE) || graph === bookkeeping.metaGraph;

const REPLICA = 'urn:onerecord:replica:';

/**
 * The replica's own graphs: a union graph per view whose default graph is a union, each named graph's views
 * (joined into GRAPH patterns), and each object's `latestRevision` link, since the latest revision is held once,
 * in the object's graph (docs/sparql-replica.md).
 */
export const LAYOUT = {
  latestUnion: `${REPLICA}latest`,
  eventsUnion: `${REPLICA}events`,
  auditUnion: `${REPLICA}audit`,
  membership: `${REPLICA}views`,
  inView: `${REPLICA}in`,
  latestRevision: `${REPLICA}latestRevision`,
  view: (view: View) => `${REPLICA}view:${view}`,
  /** A graph no store holds: an empty dataset. */
  empty: `${REPLICA}no-graph`,
  /** Quads that grow the tables of a new copy, dropped at once (see ReplicaStore.growPastNextPoint). */
  padding: `${REPLICA}padding`,
} as const;
