import { store as meta } from '../../rdf/vocab.js';
import type { View } from '../query-service.js';
import { entryOf } from '../../map-entry.js';

/*
 * The graphs of each analytics view on the engine, told by their names (docs/ARCHITECTURE.md, "How
 * data is laid out in the store"): the engine holds every graph side by side, and a view of a large
 * store has too many graphs to list in a query (MAX_DATASET_GRAPHS), so a view is a rule on names.
 */

/** One graph, or every graph whose IRI matches `pattern` (anchored; the same in JavaScript and in SPARQL's REGEX). */
export type GraphSet = { readonly iri: string } | { readonly pattern: string };

export interface ViewGraphs {
  /** The graphs whose union is the default graph. */
  readonly default: GraphSet;
  readonly named: GraphSet;
}

const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** One path segment: an object's, event's, request's or grant's id (never a `/`, `?` or `#`). */
const ID = '[^/?#]+';

/** The graphs of each view on a server whose base URL is `baseUrl`. */
export function engineViews(baseUrl: string): Record<View, ViewGraphs> {
  const object = `${escaped(`${baseUrl}/logistics-objects/`)}${ID}`;
  const same = (pattern: string): ViewGraphs => ({ default: { pattern }, named: { pattern } });
  return {
    latest: same(`^${object}$`),
    events: same(`^${object}(/logistics-events/${ID})?$`),
    audit: same(`^(${escaped(`${baseUrl}/action-requests/`)}|${escaped(`${baseUrl}/internal/acl/`)})${ID}$`),
    // Every revision as `{object}?revision={n}` (revisionGraph), their metadata the default graph.
    revisions: { default: { iri: meta.metaGraph }, named: { pattern: `^${object}\\?revision=[0-9]+$` } },
  };
}

const compiled = new Map<string, RegExp>();

/** Whether `graph` is one of `set`. */
export function inGraphSet(set: GraphSet, graph: string): boolean {
  if ('iri' in set) return set.iri === graph;
  return entryOf(compiled, set.pattern, () => new RegExp(set.pattern)).test(graph);
}
