import sparqljs from 'sparqljs';
import { store as bookkeeping } from '../rdf/vocab.js';
import { OxigraphIndex, oxigraph, type SparqlJsonResults } from './oxigraph-index.js';
import type { QueryAnswer, QueryJob } from './query-replica.js';
import { LAYOUT, replicaGraph, type View } from './replica-layout.js';
import { ARCHIVE_LINE } from './schema/finished-graphs.js';
import { revisionGraph, revisionOfGraph } from './schema/revisions.js';
import { RESULT_MEDIA_TYPES } from './sparql-query.js';
import { writeSolutions } from './sparql-results.js';

const NQUADS = 'application/n-quads';
const NTRIPLES = 'application/n-triples';
const iri = (value: string) => `<${value}>`;
type StoreQuad = ReturnType<typeof oxigraph.quad>;

/** A journal record as text: N-Quads lines deleted and inserted (archive lines among the latter, see finished-graphs.ts). */
export interface ReplicaRecord {
  insert: string;
  delete: string;
}

/** The graphs whose view's default graph is a union, and that union. */
type UnionKind = 'object' | 'event' | 'audit';
const UNION_OF: Readonly<Record<UnionKind, string>> = { object: LAYOUT.latestUnion, event: LAYOUT.eventsUnion, audit: LAYOUT.auditUnion };
const VIEWS_OF: Readonly<Record<UnionKind, readonly View[]>> = { object: ['latest', 'events'], event: ['events'], audit: ['audit'] };

/** The union graphs each view's default graph is made of (the revisions view: the revision metadata). */
const DEFAULT_GRAPHS: Readonly<Record<View, readonly string[]>> = {
  latest: [LAYOUT.latestUnion],
  events: [LAYOUT.latestUnion, LAYOUT.eventsUnion],
  revisions: [bookkeeping.metaGraph],
  audit: [LAYOUT.auditUnion],
};

/** A graph of the history window: a whole revision (with its metadata) or a finished action request. */
interface WindowEntry {
  graph: string;
  quads: number;
  kind: 'revision' | 'request';
}

/**
 * The history the replica holds, bounded in quads: past `maxQuads`, the oldest entries leave.
 * Entries copied from the archive by a new replica come newest first and are older than any
 * written since, so they leave first, from the end of their list.
 */
class HistoryWindow {
  private readonly copied: WindowEntry[] = [];
  private live: WindowEntry[] = [];
  private head = 0;
  private quads = 0;

  constructor(private readonly maxQuads: number) {}

  /** Whether the window holds anything at all (a bound of 0 turns history analytics off). */
  get open(): boolean {
    return this.maxQuads > 0;
  }

  addCopied(entry: WindowEntry): void {
    this.copied.push(entry);
    this.quads += entry.quads;
  }

  add(entry: WindowEntry): void {
    this.live.push(entry);
    this.quads += entry.quads;
  }

  /** The oldest entries past the bound, taken out of the window. */
  overflow(): WindowEntry[] {
    const out: WindowEntry[] = [];
    while (this.quads > this.maxQuads) {
      const entry = this.copied.pop() ?? this.live[this.head++];
      if (!entry) break;
      this.quads -= entry.quads;
      out.push(entry);
    }
    if (this.head > 1024 && this.head * 2 > this.live.length) {
      this.live = this.live.slice(this.head);
      this.head = 0;
    }
    return out;
  }
}

/** Lines waiting to be loaded, and the graphs they go into (the unions and the views' membership aside). */
class PendingLines {
  lines: string[] = [];
  graphs = new Set<string>();

  take(): string[] {
    const lines = this.lines;
    this.lines = [];
    this.graphs.clear();
    return lines;
  }
}

/** A revision a record writes: its object and number, and its metadata lines (N-Quads in the metadata graph). */
interface NewRevision {
  object: string;
  number: number;
  meta: string[];
}

/**
 * The query replica: ONE Oxigraph store that all views share, fed with the journal records of the
 * main store, which it applies as the hot store does: each object's latest graph (named after the
 * object) changed in place by a change's deletes and inserts, events, action requests and grants.
 * Beside them:
 * - per view whose default graph is a union, that union as one graph (the latest graphs; the
 *   events; the action requests and grants), so queries scan one graph, not thousands: a quad
 *   deleted from a graph leaves the union unless another graph of that view still holds it;
 * - each named graph's views (`<graph> replica:in <view>`), which the GRAPH patterns of a query
 *   are joined with (see `scopedToView`), so `GRAPH ?g` in a view finds that view's graphs only;
 * - the history window: the newest revisions whole (`{object}?revision={n}`, copied from the
 *   object's graph as the record that wrote it leaves it) with their metadata, and the newest
 *   finished action requests (the record that finishes one carries its final content), at most
 *   `historyMaxQuads` quads in all, the oldest leaving first.
 * Records are applied in order; the insertions of consecutive records are loaded together.
 */
export class ReplicaStore extends OxigraphIndex {
  /** Each object's latest revision number. */
  private readonly objects = new Map<string, number>();
  private readonly window: HistoryWindow;
  private readonly isObject = (graph: string) => this.objects.has(graph);

  constructor(historyMaxQuads: number) {
    super();
    this.window = new HistoryWindow(historyMaxQuads);
  }

  /**
   * Applies journal records in order. Their insertions are loaded together, in one `load()` per
   * batch; a record whose deletions (or whose new revision's copy) concern a graph that insertions
   * still waiting go into has them loaded first. Deleting from a union a quad that a waiting
   * insertion puts back is harmless: the insertion comes after.
   */
  applyRecords(records: readonly ReplicaRecord[]): void {
    const pending = new PendingLines();
    for (const record of records) {
      const lines = splitLines(record.insert);
      const revisions = this.newRevisions(lines);
      const deletions = splitLines(record.delete).filter((line) => this.unionKind(graphOf(line)) !== undefined);
      const changes = revisions.filter((r) => r.number > 1);
      if (deletions.some((line) => pending.graphs.has(graphOf(line))) || changes.some((r) => pending.graphs.has(r.object))) this.load(pending.take());
      this.remove(deletions);
      this.toInsert(lines, pending);
      if (!this.window.open) continue;
      // A new revision is what its object's graph keeps of the one before (the store, read after the deletions) and what the record inserts.
      const kept = new Map(changes.map((r) => [r.object, splitLines(this.graphNTriples(r.object))]));
      for (const revision of revisions) this.addRevision(revision, kept.get(revision.object) ?? [], lines, pending);
    }
    this.load(pending.take());
    this.evict();
  }

  /** A part of a new replica's copy of the hot store: its graphs as N-Quads, the metadata graph first (it names the objects). */
  copyHot(nquads: string): void {
    const lines = splitLines(nquads);
    // The metadata of the first and latest revisions only tells which graphs are objects: the window's entries bring their own.
    this.newRevisions(lines);
    const out = new PendingLines();
    this.toInsert(lines, out);
    this.load(out.take());
  }

  /**
   * A part of a new replica's copy of the history window, from the archive, newest first: each
   * entry the N-Quads of one revision (its graph and its metadata) or of one finished request.
   */
  copyHistory(entries: readonly string[]): void {
    const out: string[] = [];
    for (const entry of entries) {
      let named: { graph: string; kind: WindowEntry['kind'] } | undefined;
      let quads = 0;
      for (const line of splitLines(entry)) {
        const graph = graphOf(line);
        const found = replicaGraph(graph, this.isObject);
        if (found?.kind === 'revision') named = { graph, kind: 'revision' };
        else if (found?.kind === 'audit') {
          named = { graph, kind: 'request' };
          out.push(`${tripleOf(line)} ${iri(LAYOUT.auditUnion)} .\n`);
        } else if (found?.kind !== 'meta') continue;
        out.push(`${line}\n`);
        quads++;
      }
      if (!named) continue;
      out.push(membership(named.graph, named.kind === 'revision' ? 'revisions' : 'audit'));
      this.window.addCopied({ ...named, quads });
    }
    this.load(out);
    this.evict();
  }

  /** The revisions the metadata lines among `lines` write; each object learnt with its latest number. */
  private newRevisions(lines: readonly string[]): NewRevision[] {
    const found = new Map<string, NewRevision>();
    const tail = ` ${iri(bookkeeping.metaGraph)} .`;
    for (const line of lines) {
      if (!line.endsWith(tail) || !line.startsWith('<')) continue;
      const subject = line.slice(1, line.indexOf('> '));
      let revision = found.get(subject);
      if (!revision) {
        const of = revisionOfGraph(subject);
        if (!of) continue;
        found.set(subject, (revision = { ...of, meta: [] }));
        this.objects.set(of.object, Math.max(of.number, this.objects.get(of.object) ?? 0));
      }
      revision.meta.push(`${line}\n`);
    }
    return [...found.values()];
  }

  /** The lines to load for inserted N-Quads lines: in their graph, in their view's union, with the graph's views. */
  private toInsert(lines: readonly string[], out: PendingLines): void {
    const seen = new Set<string>();
    const finished = new Map<string, number>();
    for (let line of lines) {
      const archived = line.startsWith(ARCHIVE_LINE);
      if (archived) line = line.slice(ARCHIVE_LINE.length);
      const graph = graphOf(line);
      const kind = this.unionKind(graph);
      if (!kind) continue;
      out.lines.push(`${line}\n`, `${tripleOf(line)} ${iri(UNION_OF[kind])} .\n`);
      if (!seen.has(graph)) {
        seen.add(graph);
        out.graphs.add(graph);
        for (const view of VIEWS_OF[kind]) out.lines.push(membership(graph, view));
      }
      // A finished request (its final content, kept for the audit view while it is in the window).
      if (archived) finished.set(graph, (finished.get(graph) ?? 0) + 1);
    }
    for (const [graph, quads] of finished) this.window.add({ graph, quads, kind: 'request' });
  }

  /**
   * Adds a new revision to the history window, whole in its own graph, with its metadata: the
   * triples its object's graph `kept` (N-Triples lines) and those its record's `lines` insert there.
   */
  private addRevision({ object, number, meta }: NewRevision, kept: readonly string[], lines: readonly string[], out: PendingLines): void {
    const graph = revisionGraph(object, number);
    const into = ` ${iri(graph)} .\n`;
    for (const line of kept) out.lines.push(line.slice(0, -2) + into);
    const tail = ` ${iri(object)} .`;
    let inserted = 0;
    for (const line of lines) {
      if (!line.endsWith(tail)) continue;
      out.lines.push(tripleOf(line) + into);
      inserted++;
    }
    out.lines.push(...meta, membership(graph, 'revisions'));
    out.graphs.add(graph);
    this.window.add({ graph, quads: kept.length + inserted + meta.length, kind: 'revision' });
  }

  /** Takes the oldest entries of the history window out while it holds more than its bound. */
  private evict(): void {
    const gone = this.window.overflow();
    if (gone.length === 0) return;
    for (const { graph, kind } of gone) {
      // A finished request's quads leave the audit union too, unless another graph holds them.
      if (kind === 'request') this.remove(splitLines(this.graphNTriples(graph)).map((line) => `${line.slice(0, -2)} ${iri(graph)} .`));
    }
    const drops = gone.map(({ graph, kind }) => {
      const view = LAYOUT.view(kind === 'revision' ? 'revisions' : 'audit');
      return `DROP SILENT GRAPH ${iri(graph)} ; DELETE WHERE { GRAPH ${iri(bookkeeping.metaGraph)} { ${iri(graph)} ?p ?o } } ; DELETE DATA { GRAPH ${iri(LAYOUT.membership)} { ${iri(graph)} ${iri(LAYOUT.inView)} ${iri(view)} } }`;
    });
    this.store.update(drops.join(' ;\n'));
  }

  /** Deletes N-Quads lines (of graphs a union holds) from their graphs, and from the union of their view unless another graph of that view still holds them. */
  private remove(lines: readonly string[]): void {
    if (lines.length === 0) return;
    for (const q of oxigraph.parse(lines.join('\n'), { format: NQUADS, lenient: true })) {
      const graph = q.graph.value;
      const kind = this.unionKind(graph)!;
      if (!this.store.has(q)) continue;
      this.store.delete(q);
      if (!this.heldElsewhere(q, kind)) this.store.delete(oxigraph.quad(q.subject, q.predicate, q.object, oxigraph.namedNode(UNION_OF[kind])));
    }
  }

  private heldElsewhere(q: StoreQuad, kind: UnionKind): boolean {
    return this.store.match(q.subject, q.predicate, q.object, null).some(({ graph }) => graph.termType === 'NamedNode' && this.unionKind(graph.value) === kind);
  }

  /** The kind of graph whose quads a union holds; undefined for the window's revisions, the metadata and graphs no view shows. */
  private unionKind(graph: string): UnionKind | undefined {
    const kind = replicaGraph(graph, this.isObject)?.kind;
    return kind === 'object' || kind === 'event' || kind === 'audit' ? kind : undefined;
  }

  private load(lines: readonly string[]): void {
    if (lines.length === 0) return;
    const text = lines.join('');
    this.makeRoom(text.length);
    this.store.load(text, { format: NQUADS, lenient: true });
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

const membership = (graph: string, view: View) => `${iri(graph)} ${iri(LAYOUT.inView)} ${iri(LAYOUT.view(view))} ${iri(LAYOUT.membership)} .\n`;

/** Lines of N-Quads text, without their newlines (archive lines included). */
const splitLines = (text: string) => text.split('\n').filter((line) => line.length > 0);

/**
 * The graph of an N-Quads line, and its triple (`s p o`). Lines are our own serialisation
 * (`quadToNq`): each ends with ` <graph> .`, and since an IRI holds no space, the last ` <` of
 * a line starts its graph whatever a literal before it contains.
 */
const graphOf = (line: string) => line.slice(line.lastIndexOf(' <') + 2, line.endsWith('\n') ? -4 : -3);
const tripleOf = (line: string) => line.slice(0, line.lastIndexOf(' <'));

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
