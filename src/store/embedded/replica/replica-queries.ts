import { store as bookkeeping } from '../../../rdf/vocab.js';
import type { View } from '../../query-service.js';
import type { SparqlJsonResults } from '../../readers.js';
import { RESULT_MEDIA_TYPES } from '../../sparql-query.js';
import { writeSolutions } from '../../sparql-results.js';
import { oxigraph } from '../oxigraph/oxigraph-index.js';
import type { QueryAnswer, QueryJob } from './messages.js';
import { LAYOUT } from './replica-layout.js';
import { scopedToView } from './view-scoping.js';

const NTRIPLES = 'application/n-triples';

type ReplicaOxigraph = InstanceType<typeof oxigraph.Store>;
type GraphName = ReturnType<typeof oxigraph.namedNode>;

/** The union graphs each view's default graph is made of (the revisions view: the revision metadata). */
const DEFAULT_GRAPHS: Readonly<Record<View, readonly string[]>> = {
  latest: [LAYOUT.latestUnion],
  events: [LAYOUT.latestUnion, LAYOUT.eventsUnion],
  revisions: [bookkeeping.metaGraph],
  audit: [LAYOUT.auditUnion],
};

const selectJson = (store: ReplicaOxigraph, text: string, options: object = {}) =>
  JSON.parse(store.query(text, { ...options, results_format: RESULT_MEDIA_TYPES.json }) as string) as SparqlJsonResults;

/**
 * Runs a query of the replica over its view (or the part of it `job.dataset` names, whose graphs
 * `graphsIn` finds in the view); `position` is filled in by the caller.
 */
export function runOnReplica(
  store: ReplicaOxigraph,
  job: QueryJob,
  graphsIn: (iris: readonly string[], view: View) => GraphName[],
): Omit<QueryAnswer, 'position'> {
  const options: Parameters<typeof store.query>[1] = {};
  if (job.dataset) {
    options.default_graph = graphsIn(job.dataset.default, job.view);
    // The membership graph stays visible to the GRAPH patterns' join with it.
    options.named_graphs = [...graphsIn(job.dataset.named, job.view), oxigraph.namedNode(LAYOUT.membership)];
  } else {
    options.default_graph = DEFAULT_GRAPHS[job.view].map((g) => oxigraph.namedNode(g));
  }
  const text = scopedToView(job.text, job.view, (probe) => selectJson(store, probe).head.vars);
  if (job.form === 'SELECT') {
    const results = selectJson(store, text, options);
    const truncated = results.results.bindings.length > job.maxRows;
    if (truncated) results.results.bindings.length = job.maxRows;
    return { body: writeSolutions(results, job.format as 'json'), truncated };
  }
  if (job.form === 'ASK')
    return {
      body: store.query(text, { ...options, results_format: RESULT_MEDIA_TYPES[job.format] }) as string,
      truncated: false,
    };
  const ntriples = store.query(text, { ...options, results_format: NTRIPLES }) as string;
  const lines = ntriples.split('\n').filter((line) => line.length > 0);
  const truncated = lines.length > job.maxRows;
  if (truncated) lines.length = job.maxRows;
  if (job.format === 'ntriples') return { body: lines.map((l) => `${l}\n`).join(''), truncated };
  const graph = new oxigraph.Store();
  graph.load(lines.join('\n'), { format: NTRIPLES, lenient: true });
  return {
    body: graph.dump({ format: RESULT_MEDIA_TYPES[job.format], from_graph_name: oxigraph.defaultGraph() }),
    truncated,
  };
}
