import { readlinkSync } from 'node:fs';
import { constants, setPriority } from 'node:os';
import { parentPort } from 'node:worker_threads';
import oxigraphModule from 'oxigraph';
import { store as bookkeeping } from '../rdf/vocab.js';
import type { SparqlJsonResults } from './oxigraph-index.js';
import type { QueryJob, QueryReply, ReplicaMessage, View, WorkerMessage } from './query-replica.js';
import { revisionGraph, revisionOfGraph } from './schema/revisions.js';
import { RESULT_MEDIA_TYPES } from './sparql-query.js';
import { writeSolutions } from './sparql-results.js';

/**
 * The thread of QueryReplica: its own Oxigraph stores, one per view, so that each view's dataset
 * is the store's own (default graph and named graphs) and queries run without graph lists:
 * - latest: the latest revision graph of every object; its default graph is their union;
 * - events: the same, plus one graph per Logistics Event; default graph: the union of all;
 * - revisions: every revision graph; its default graph holds the revision metadata;
 * - audit: one graph per action request and one per access grant; default graph: their union.
 * It applies what the main store committed, in commit order, and answers one query at a time.
 */
const oxigraph = (oxigraphModule as unknown as { default?: typeof oxigraphModule }).default ?? oxigraphModule;
const port = parentPort!;
const NQUADS = 'application/n-quads';
const NTRIPLES = 'application/n-triples';

// Lowest priority (Linux): a heavy query takes only the CPU the request thread leaves.
try {
  setPriority(Number(readlinkSync('/proc/thread-self').split('/').pop()), constants.priority.PRIORITY_LOW);
} catch {
  // not Linux, or not allowed: the time budget still bounds a query
}

/** The views that hold the latest revision of every object. */
const CURRENT: readonly View[] = ['latest', 'events'];

const stores: Record<View, InstanceType<typeof oxigraph.Store>> = {
  latest: new oxigraph.Store(),
  revisions: new oxigraph.Store(),
  events: new oxigraph.Store(),
  audit: new oxigraph.Store(),
};
/** Latest revision number per object, as far as the replica has seen. */
const latestRevision = new Map<string, number>();

type Target = { view: View; graph: InstanceType<typeof oxigraph.NamedNode> | InstanceType<typeof oxigraph.DefaultGraph> };

/**
 * Where the quads of one graph of the main store go in the views. A revision graph also goes to
 * the CURRENT views when it is the newest revision of its object, replacing the one before: the main store
 * writes a revision's graph whole, in one commit, and never changes it afterwards.
 */
function targetsOf(graph: string): Target[] {
  if (graph === bookkeeping.metaGraph) return [{ view: 'revisions', graph: oxigraph.defaultGraph() }];
  if (graph === bookkeeping.eventsGraph) return [];
  const node = oxigraph.namedNode(graph);
  const revision = revisionOfGraph(graph);
  if (revision) {
    const targets: Target[] = [{ view: 'revisions', graph: node }];
    const latest = latestRevision.get(revision.object) ?? 0;
    if (revision.number > latest) {
      if (latest > 0) for (const view of CURRENT) stores[view].update(`DROP SILENT GRAPH <${revisionGraph(revision.object, latest)}>`);
      latestRevision.set(revision.object, revision.number);
    }
    if (revision.number >= latest) for (const view of CURRENT) targets.push({ view, graph: node });
    return targets;
  }
  if (graph.includes('/logistics-events/')) return [{ view: 'events', graph: node }];
  if (graph.includes('/action-requests/') || graph.includes('/internal/acl/')) return [{ view: 'audit', graph: node }];
  return [];
}

function loadGraph(graph: string, ntriples: string): void {
  for (const { view, graph: to } of targetsOf(graph)) stores[view].load(ntriples, { format: NTRIPLES, to_graph_name: to, lenient: true });
}

const decoder = new TextDecoder();

/**
 * The N-Quads lines of a record, as N-Triples lines grouped by graph. Records are our own
 * serialisation (`quadToNq`): each line ends with ` <graph> .`, and since an IRI holds no space,
 * the last ` <` of a line starts its graph whatever a literal before it contains.
 */
function triplesByGraph(nquads: Uint8Array): Map<string, string[]> {
  const groups = new Map<string, string[]>();
  for (const line of decoder.decode(nquads).split('\n')) {
    if (line.length === 0) continue;
    const at = line.lastIndexOf(' <');
    const graph = line.slice(at + 2, line.length - 3);
    let group = groups.get(graph);
    if (!group) groups.set(graph, (group = []));
    group.push(`${line.slice(0, at)} .\n`);
  }
  return groups;
}

/** One committed record: its insertions loaded graph by graph (one bulk load each), its deletions removed, in every view they belong to. */
function applyRecord(deleteText: Uint8Array, insertText: Uint8Array): void {
  for (const [graph, triples] of triplesByGraph(insertText)) {
    for (const { view, graph: to } of targetsOf(graph)) stores[view].load(triples.join(''), { format: NTRIPLES, to_graph_name: to, lenient: true });
  }
  if (deleteText.length === 0) return;
  for (const q of oxigraph.parse(deleteText, { format: NQUADS, lenient: true })) {
    for (const { view, graph: to } of targetsOf(q.graph.value)) stores[view].delete(oxigraph.quad(q.subject, q.predicate, q.object, to));
  }
}

const graphList = (iris: readonly string[]) => iris.map((iri) => oxigraph.namedNode(iri));

function runQuery(job: QueryJob): QueryReply {
  const store = stores[job.view];
  const options: Parameters<typeof store.query>[1] = {};
  if (job.dataset) {
    // An empty list would mean "no restriction"; a graph no store holds means "empty".
    options.default_graph = graphList(job.dataset.default.length > 0 ? job.dataset.default : [EMPTY_GRAPH]);
    options.named_graphs = graphList(job.dataset.named.length > 0 ? job.dataset.named : [EMPTY_GRAPH]);
  } else {
    options.use_default_graph_as_union = job.view !== 'revisions';
  }
  if (job.form === 'SELECT') {
    const results = JSON.parse(store.query(job.text, { ...options, results_format: RESULT_MEDIA_TYPES.json }) as string) as SparqlJsonResults;
    const truncated = results.results.bindings.length > job.maxRows;
    if (truncated) results.results.bindings.length = job.maxRows;
    return { body: writeSolutions(results, job.format as 'json'), truncated };
  }
  if (job.form === 'ASK') return { body: store.query(job.text, { ...options, results_format: RESULT_MEDIA_TYPES[job.format] }) as string, truncated: false };
  const ntriples = store.query(job.text, { ...options, results_format: NTRIPLES }) as string;
  const lines = ntriples.split('\n').filter((line) => line.length > 0);
  const truncated = lines.length > job.maxRows;
  if (truncated) lines.length = job.maxRows;
  if (job.format === 'ntriples') return { body: lines.map((l) => `${l}\n`).join(''), truncated };
  const graph = new oxigraph.Store();
  graph.load(lines.join('\n'), { format: NTRIPLES, lenient: true });
  return { body: graph.dump({ format: RESULT_MEDIA_TYPES[job.format], from_graph_name: oxigraph.defaultGraph() }), truncated };
}

const EMPTY_GRAPH = 'urn:onerecord:sparql:no-graph';

port.on('message', (message: ReplicaMessage) => {
  switch (message.kind) {
    case 'graph':
      loadGraph(message.graph, message.ntriples);
      return;
    case 'loaded':
      port.postMessage({ kind: 'loaded' } satisfies WorkerMessage);
      return;
    case 'record':
      applyRecord(message.delete, message.insert);
      return;
    case 'query': {
      port.postMessage({ kind: 'started' } satisfies WorkerMessage);
      let reply: QueryReply;
      try {
        reply = runQuery(message);
      } catch (err) {
        reply = { error: (err as Error).message };
      }
      port.postMessage(reply satisfies WorkerMessage);
      return;
    }
  }
});
