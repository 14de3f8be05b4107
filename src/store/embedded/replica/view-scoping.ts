import sparqljs from 'sparqljs';
import type { View } from '../../query-service.js';
import { LAYOUT } from './replica-layout.js';

type SparqlNode = Record<string, unknown>;
const isGraphPattern = (node: unknown): node is SparqlNode & { type: 'graph'; name: unknown; patterns: unknown[] } =>
  typeof node === 'object' &&
  node !== null &&
  (node as SparqlNode).type === 'graph' &&
  Array.isArray((node as SparqlNode).patterns);
const term = (value: string) => ({ termType: 'NamedNode', value });

const variable = (value: string) => ({ termType: 'Variable', value });
const inViewPattern = (graph: unknown, view: View) => ({
  type: 'graph',
  name: term(LAYOUT.membership),
  patterns: [
    { type: 'bgp', triples: [{ subject: graph, predicate: term(LAYOUT.inView), object: term(LAYOUT.view(view)) }] },
  ],
});

/** `GRAPH ?held { P } ?held latestRevision g`: the latest revision named `g` in the revisions view. */
const latestRevisionPattern = (item: SparqlNode & { name: unknown }, held: unknown) => {
  const link = {
    type: 'graph',
    name: term(LAYOUT.membership),
    patterns: [
      { type: 'bgp', triples: [{ subject: held, predicate: term(LAYOUT.latestRevision), object: item.name }] },
    ],
  };
  return { type: 'group', patterns: [{ ...structuredClone(item), name: held }, link] };
};

/**
 * The query with each `GRAPH g { … }` joined with "g is a graph of `view`", since the replica's store holds every
 * view's graphs; in the revisions view it also finds each object's latest revision through `latestRevision`
 * (docs/sparql-replica.md). `projected` answers a query's variables (run with LIMIT 0), so `SELECT *` keeps them.
 */
export function scopedToView(text: string, view: View, projected?: (probe: string) => string[]): string {
  if (!/graph/i.test(text)) return text;
  const query = new sparqljs.Parser().parse(text) as sparqljs.Query & { where?: unknown[] };
  const generator = new sparqljs.Generator();
  const selectAll =
    query.queryType === 'SELECT' && query.variables.some((v) => 'termType' in v && v.termType === 'Wildcard');
  const probe =
    view === 'revisions' && selectAll ? generator.stringify({ ...query, limit: 0 } as sparqljs.SelectQuery) : undefined;
  let scoped = false;
  let latestVariables = 0;
  const latestVariable = () => {
    let name: string;
    do name = `replicaLatest${latestVariables++}`;
    while (text.includes(name));
    return variable(name);
  };
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) {
      node.forEach((item: unknown, i) => {
        visit(item);
        if (!isGraphPattern(item)) return;
        scoped = true;
        const inView = { type: 'group', patterns: [item, inViewPattern(item.name, view)] };
        node[i] =
          view === 'revisions'
            ? { type: 'union', patterns: [inView, latestRevisionPattern(item, latestVariable())] }
            : inView;
      });
    } else if (typeof node === 'object' && node !== null && !('termType' in node)) {
      for (const value of Object.values(node)) visit(value);
    }
  };
  visit(query.where);
  if (!scoped) return text;
  if (probe !== undefined) {
    if (!projected) throw new Error('a SELECT * in the revisions view needs its projected variables');
    (query as sparqljs.SelectQuery).variables = projected(probe).map(variable) as sparqljs.Variable[];
  }
  return generator.stringify(query);
}
