import sparqljs from 'sparqljs';
import { store as bookkeeping } from '../rdf/vocab.js';
import { OxigraphIndex, oxigraph, type SparqlJsonResults } from './oxigraph-index.js';
import type { QueryAnswer, QueryJob, ReplicaCommit } from './query-replica.js';
import { LAYOUT, replicaGraph, type View } from './replica-layout.js';
import { revisionGraph } from './schema/revisions.js';
import { RESULT_MEDIA_TYPES } from './sparql-query.js';
import { writeSolutions } from './sparql-results.js';

const NQUADS = 'application/n-quads';
const NTRIPLES = 'application/n-triples';
const iri = (value: string) => `<${value}>`;
type StoreQuad = ReturnType<typeof oxigraph.quad>;
/** A triple in N-Triples (and SPARQL) syntax, as Oxigraph writes its terms. */
const ntriple = (q: StoreQuad) => `${q.subject.toString()} ${q.predicate.toString()} ${q.object.toString()} .`;

/** The union graphs each view's default graph is made of (the revisions view: the revision metadata). */
const DEFAULT_GRAPHS: Readonly<Record<View, readonly string[]>> = {
  latest: [LAYOUT.latestUnion],
  events: [LAYOUT.latestUnion, LAYOUT.eventsUnion],
  revisions: [bookkeeping.metaGraph],
  audit: [LAYOUT.auditUnion],
};

/**
 * The query replica: ONE Oxigraph store that all views share. It holds each graph of the main
 * store that a view shows once, under its own name (every revision of every object, every
 * event, action request and grant, the revision metadata), plus:
 * - per view whose default graph is a union, that union as one graph (the latest revision of
 *   every object; the events; the action requests and grants), so queries scan one graph, not
 *   thousands: a new revision's triples go into the union of the latest, and those of the
 *   revision it replaces that no other latest revision holds leave it;
 * - each named graph's views (`<graph> replica:in <view>`), which the GRAPH patterns of a query
 *   are joined with (see `scopedToView`), so `GRAPH ?g` in a view finds that view's graphs only.
 * Commits are applied in order; the insertions of consecutive commits are loaded together.
 */
export class ReplicaStore extends OxigraphIndex {
  /** Latest revision number per object, as far as the replica has seen. */
  private readonly latest = new Map<string, number>();

  /** Applies commits in order: insertions loaded together, up to each commit that deletes. */
  applyCommits(commits: readonly ReplicaCommit[]): void {
    let inserts: string[] = [];
    for (const commit of commits) {
      if (commit.delete.length > 0) {
        this.insert(inserts);
        inserts = [];
        this.remove(commit.delete);
      }
      if (commit.insert.length > 0) inserts.push(commit.insert);
    }
    this.insert(inserts);
  }

  /** Loads N-Quads lines (of any graphs, in any order) into the graphs and views they belong to. */
  private insert(texts: readonly string[]): void {
    if (texts.length === 0) return;
    const groups = triplesByGraph(texts);
    // The newest revision of each object among these and those seen before replaces the one before it.
    const newest = new Map<string, { number: number; graph: string }>();
    for (const graph of groups.keys()) {
      const found = replicaGraph(graph);
      if (found?.kind !== 'revision') continue;
      const best = Math.max(this.latest.get(found.object) ?? 0, newest.get(found.object)?.number ?? 0);
      if (found.number >= best) newest.set(found.object, { number: found.number, graph });
    }
    /** Revisions no longer the latest, each to the one replacing it. */
    const replaced = new Map<string, { after: string; triples: readonly string[] }>();
    for (const [object, { number, graph }] of newest) {
      const before = this.latest.get(object);
      if (before !== undefined && before < number) replaced.set(revisionGraph(object, before), { after: graph, triples: groups.get(graph)! });
      this.latest.set(object, number);
    }
    const out: string[] = [];
    for (const [graph, triples] of groups) {
      const found = replicaGraph(graph);
      if (!found) continue;
      const named = ` ${iri(graph)} .\n`;
      for (const triple of triples) out.push(triple + named);
      if (found.kind === 'meta') continue;
      const isLatest = found.kind === 'revision' && newest.get(found.object)?.graph === graph;
      if (found.kind === 'revision' && !isLatest) {
        out.push(membership(graph, 'revisions'));
        continue;
      }
      const union = isLatest ? LAYOUT.latestUnion : found.kind === 'event' ? LAYOUT.eventsUnion : LAYOUT.auditUnion;
      const views: View[] = isLatest ? ['revisions', 'latest', 'events'] : found.kind === 'event' ? ['events'] : ['audit'];
      for (const view of views) out.push(membership(graph, view));
      const into = ` ${iri(union)} .\n`;
      for (const triple of triples) out.push(triple + into);
    }
    const text = out.join('');
    this.makeRoom(text.length);
    this.store.load(text, { format: NQUADS, lenient: true });
    if (replaced.size > 0) this.dropFromLatest(replaced);
  }

  /**
   * Revisions that are no longer the latest of their object: out of the latest and events views,
   * and the triples that the revision replacing each (`after`, with its `triples` as the commit
   * gave them) no longer holds out of the union of the latest, unless another latest revision
   * holds them too. Lines that differ are compared by the store, whose literals are canonical
   * (a commit's may not be: `"5"^^xsd:double` is stored as `"5E0"`).
   */
  private dropFromLatest(replaced: ReadonlyMap<string, { after: string; triples: readonly string[] }>): void {
    const { membership: m, inView, latestUnion } = LAYOUT;
    const gone = new Set(replaced.keys());
    const inViewNode = oxigraph.namedNode(inView);
    const latestView = oxigraph.namedNode(LAYOUT.view('latest'));
    const membershipNode = oxigraph.namedNode(m);
    const heldBy = (q: StoreQuad, graph: string) => this.store.match(q.subject, q.predicate, q.object, oxigraph.namedNode(graph)).length > 0;
    const heldByOtherLatest = (q: StoreQuad) =>
      this.store
        .match(q.subject, q.predicate, q.object, null)
        .some(({ graph }) => graph.termType === 'NamedNode' && !gone.has(graph.value) && this.store.match(graph, inViewNode, latestView, membershipNode).length > 0);
    const leaving: string[] = [];
    for (const [before, { after, triples }] of replaced) {
      const kept = new Set(triples.map((triple) => `${triple} .`));
      const differing = this.graphNTriples(before).split('\n').filter((line) => line.length > 0 && !kept.has(line));
      if (differing.length === 0) continue;
      for (const q of oxigraph.parse(differing.join('\n'), { format: NTRIPLES, lenient: true })) {
        if (!heldBy(q, after) && !heldByOtherLatest(q)) leaving.push(ntriple(q));
      }
    }
    const marks = [...gone].flatMap((g) => (['latest', 'events'] as const).map((view) => `${iri(g)} ${iri(inView)} ${iri(LAYOUT.view(view))} .`));
    this.store.update(`DELETE DATA { GRAPH ${iri(m)} { ${marks.join(' ')} } GRAPH ${iri(latestUnion)} { ${leaving.join(' ')} } }`);
  }

  /** Deletes N-Quads lines from their graphs, and from the union of their view unless another graph of that view still holds them. */
  private remove(text: string): void {
    const lines = text.split('\n').filter((line) => line.length > 0 && replicaGraph(graphOf(line)) !== undefined);
    if (lines.length === 0) return;
    const m = oxigraph.namedNode(LAYOUT.membership);
    const inView = oxigraph.namedNode(LAYOUT.inView);
    for (const q of oxigraph.parse(lines.join('\n'), { format: NQUADS, lenient: true })) {
      this.store.delete(q);
      const view = this.unionViewOf(q.graph.value);
      if (!view) continue;
      const viewNode = oxigraph.namedNode(LAYOUT.view(view));
      const held = this.store.match(q.subject, q.predicate, q.object, null).some((other) => other.graph.termType === 'NamedNode' && this.store.match(other.graph, inView, viewNode, m).length > 0);
      if (!held) this.store.delete(oxigraph.quad(q.subject, q.predicate, q.object, oxigraph.namedNode(UNION_OF[view])));
    }
  }

  /** The view whose union graph holds what `graph` holds, if any. */
  private unionViewOf(graph: string): 'latest' | 'events' | 'audit' | undefined {
    const found = replicaGraph(graph);
    if (found?.kind === 'revision') return this.latest.get(found.object) === found.number ? 'latest' : undefined;
    if (found?.kind === 'event') return 'events';
    if (found?.kind === 'audit') return 'audit';
    return undefined;
  }

  /** Whether `graph` is one of the named graphs of `view`. */
  private inView(graph: string, view: View): boolean {
    return this.store.match(oxigraph.namedNode(graph), oxigraph.namedNode(LAYOUT.inView), oxigraph.namedNode(LAYOUT.view(view)), oxigraph.namedNode(LAYOUT.membership)).length > 0;
  }

  /** Runs a query over its view (or the part of it `job.dataset` names); `position` is filled in by the caller. */
  run(job: QueryJob): Omit<QueryAnswer, 'position'> {
    const options: Parameters<typeof this.store.query>[1] = {};
    if (job.dataset) {
      options.default_graph = this.graphsIn(job.dataset.default, job.view);
      // The membership graph stays visible to the GRAPH patterns' join with it.
      options.named_graphs = [...this.graphsIn(job.dataset.named, job.view), oxigraph.namedNode(LAYOUT.membership)];
    } else {
      options.default_graph = DEFAULT_GRAPHS[job.view].map((g) => oxigraph.namedNode(g));
    }
    const text = scopedToView(job.text, job.view);
    if (job.form === 'SELECT') {
      const results = JSON.parse(this.store.query(text, { ...options, results_format: RESULT_MEDIA_TYPES.json }) as string) as SparqlJsonResults;
      const truncated = results.results.bindings.length > job.maxRows;
      if (truncated) results.results.bindings.length = job.maxRows;
      return { body: writeSolutions(results, job.format as 'json'), truncated };
    }
    if (job.form === 'ASK') return { body: this.store.query(text, { ...options, results_format: RESULT_MEDIA_TYPES[job.format] }) as string, truncated: false };
    const ntriples = this.store.query(text, { ...options, results_format: NTRIPLES }) as string;
    const lines = ntriples.split('\n').filter((line) => line.length > 0);
    const truncated = lines.length > job.maxRows;
    if (truncated) lines.length = job.maxRows;
    if (job.format === 'ntriples') return { body: lines.map((l) => `${l}\n`).join(''), truncated };
    const graph = new oxigraph.Store();
    graph.load(lines.join('\n'), { format: NTRIPLES, lenient: true });
    return { body: graph.dump({ format: RESULT_MEDIA_TYPES[job.format], from_graph_name: oxigraph.defaultGraph() }), truncated };
  }

  /** The graphs of `iris` that `view` holds; a graph no store holds when there are none (an empty list would mean "no restriction"). */
  private graphsIn(iris: readonly string[], view: View) {
    const held = iris.filter((graph) => this.inView(graph, view));
    return (held.length > 0 ? held : [LAYOUT.empty]).map((graph) => oxigraph.namedNode(graph));
  }
}

const UNION_OF = { latest: LAYOUT.latestUnion, events: LAYOUT.eventsUnion, audit: LAYOUT.auditUnion } as const;

const membership = (graph: string, view: View) => `${iri(graph)} ${iri(LAYOUT.inView)} ${iri(LAYOUT.view(view))} ${iri(LAYOUT.membership)} .\n`;

/**
 * The graph of an N-Quads line. Lines are our own serialisation (`quadToNq`): each ends with
 * ` <graph> .`, and since an IRI holds no space, the last ` <` of a line starts its graph
 * whatever a literal before it contains.
 */
const graphOf = (line: string) => line.slice(line.lastIndexOf(' <') + 2, line.length - 3);

/** N-Quads lines as their triples' terms (`s p o`, no final dot) grouped by graph. */
function triplesByGraph(texts: readonly string[]): Map<string, string[]> {
  const groups = new Map<string, string[]>();
  for (const text of texts) {
    for (const line of text.split('\n')) {
      if (line.length === 0) continue;
      const at = line.lastIndexOf(' <');
      const graph = line.slice(at + 2, line.length - 3);
      let group = groups.get(graph);
      if (!group) groups.set(graph, (group = []));
      group.push(line.slice(0, at));
    }
  }
  return groups;
}

type SparqlNode = Record<string, unknown>;
const isGraphPattern = (node: unknown): node is SparqlNode & { type: 'graph'; name: unknown; patterns: unknown[] } =>
  typeof node === 'object' && node !== null && (node as SparqlNode).type === 'graph' && Array.isArray((node as SparqlNode).patterns);
const term = (value: string) => ({ termType: 'NamedNode', value });

/**
 * The query with each `GRAPH g { … }` joined with "g is a graph of `view`": the replica's store
 * holds the graphs of every view (and its own), and a query sees those of its view only.
 */
export function scopedToView(text: string, view: View): string {
  if (!/graph/i.test(text)) return text;
  const query = new sparqljs.Parser().parse(text) as sparqljs.SparqlQuery & { where?: unknown[] };
  let scoped = false;
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) {
      node.forEach((item: unknown, i) => {
        visit(item);
        if (!isGraphPattern(item)) return;
        const inView = { type: 'bgp', triples: [{ subject: item.name, predicate: term(LAYOUT.inView), object: term(LAYOUT.view(view)) }] };
        node[i] = { type: 'group', patterns: [item, { type: 'graph', name: term(LAYOUT.membership), patterns: [inView] }] };
        scoped = true;
      });
    } else if (typeof node === 'object' && node !== null && !('termType' in node)) {
      for (const value of Object.values(node)) visit(value);
    }
  };
  visit(query.where);
  return scoped ? new sparqljs.Generator().stringify(query) : text;
}
