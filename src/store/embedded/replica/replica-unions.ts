import type { View } from '../../query-service.js';
import { iri } from './replica-lines.js';
import { LAYOUT } from './replica-layout.js';

/** The graphs whose view's default graph is a union, and that union. */
export type UnionKind = 'object' | 'event' | 'audit';
export const UNION_OF: Readonly<Record<UnionKind, string>> = {
  object: LAYOUT.latestUnion,
  event: LAYOUT.eventsUnion,
  audit: LAYOUT.auditUnion,
};
export const VIEWS_OF: Readonly<Record<UnionKind, readonly View[]>> = {
  object: ['latest', 'events'],
  event: ['events'],
  audit: ['audit'],
};

function inViewOf(view: View): string {
  return `GRAPH ${iri(LAYOUT.membership)} { ?g ${iri(LAYOUT.inView)} ${iri(LAYOUT.view(view))} }`;
}

/**
 * Graphs of each union kind, as filters on `?g` (the views each graph is in, see VIEWS_OF): filters,
 * not patterns, so that Oxigraph looks up the views of the graphs found, far faster than the graphs of
 * a view.
 */
const OF_KIND: Readonly<Record<UnionKind, string>> = {
  object: `FILTER EXISTS { ${inViewOf('latest')} }`,
  event: `FILTER EXISTS { ${inViewOf('events')} } FILTER NOT EXISTS { ${inViewOf('latest')} }`,
  audit: `FILTER EXISTS { ${inViewOf('audit')} }`,
};

/**
 * A SPARQL update that takes the triples `?s ?p ?o` that `triples` binds out of the union of `kind`,
 * unless a graph of that kind (`others` narrowing which) still holds them.
 */
export function unionDeletion(kind: UnionKind, triples: string, others = ''): string {
  return (
    `DELETE { GRAPH ${iri(UNION_OF[kind])} { ?s ?p ?o } } ` +
    `WHERE { ${triples} FILTER NOT EXISTS { GRAPH ?g { ?s ?p ?o } ${OF_KIND[kind]} ${others} } }`
  );
}
