import { BoundedCache } from '../../../bounded-cache.js';
import { readStoreNTriples } from '../../../rdf/ntriples.js';
import { tripleToNt } from '../../../rdf/terms.js';
import { store as bookkeeping } from '../../../rdf/vocab.js';
import type { View } from '../../query-service.js';
import { ARCHIVE_LINE } from '../../schema/finished-graphs.js';
import { revisionGraph, revisionOfGraph } from '../../schema/revisions.js';
import {
  deleteData,
  OxigraphIndex,
  oxigraph,
  WASM_BYTES_PER_TEXT_BYTE,
  WASM_MEMORY_LIMIT_BYTES,
} from '../oxigraph/oxigraph-index.js';
import { LONG_GROWTH_FROM } from '../oxigraph/table-growth.js';
import { HistoryWindow, type WindowEntry } from './history-window.js';
import type { QueryAnswer, QueryJob } from './messages.js';
import { growthTarget, handoverPoint, paddingChunks, paddingLine } from './replica-growth.js';
import { LAYOUT, replicaGraph } from './replica-layout.js';
import { graphOf, iri, latestLink, membership, PendingLines, splitLines, tripleOf } from './replica-lines.js';
import { runOnReplica } from './replica-queries.js';
import { UNION_OF, type UnionKind, unionDeletion, VIEWS_OF } from './replica-unions.js';
import { entryOf } from '../../../map-entry.js';

const NQUADS = 'application/n-quads';

/**
 * Characters of the latest revisions kept for objects whose revisions entered the window (see
 * `ReplicaStore.latestTriples`).
 */
const LATEST_CHARACTERS_KEPT = 32 * 1024 * 1024;

/** Default WASM memory the replica keeps free for queries. */
export const QUERY_RESERVE_BYTES = 256 * 1024 * 1024;

/**
 * The replica's WASM memory (4 GiB at most, or its limit) cannot take what it is fed with its reserve for queries kept
 * free: it stops there (see the worker).
 */
export class ReplicaFullError extends Error {
  constructor(wasmBytes: number, reserveBytes: number, limitBytes: number) {
    const mb = (bytes: number) => Math.round(bytes / 2 ** 20);
    const limit = limitBytes < WASM_MEMORY_LIMIT_BYTES ? ` of the ${mb(limitBytes)} MB it may take` : '';
    super(
      `the query replica's memory is full (${mb(wasmBytes)} MB of WebAssembly memory in use or reserved${limit}, ` +
        `${mb(reserveBytes)} MB of it to stay free for queries)`,
    );
  }
}

/**
 * A journal record as text: N-Quads lines deleted and inserted (archive lines among the latter, see
 * finished-graphs.ts).
 */
export interface ReplicaRecord {
  insert: string;
  delete: string;
}

/** An object's latest revision: its number, and the quads of its metadata. */
interface Latest {
  number: number;
  meta: number;
}

/**
 * A revision a record writes: its object and number, its metadata lines (N-Quads in the metadata graph), and the
 * revision it replaces.
 */
interface NewRevision {
  object: string;
  number: number;
  meta: string[];
  replaces?: Latest;
}

/**
 * The query replica: ONE Oxigraph store that all views share, fed with the main store's journal
 * records, which it applies as the hot store does; beside those graphs, one union graph per view
 * (queries scan one graph, not thousands), each graph's views, and the history window. A new
 * replica copies the hot store while it keeps being written: an object whose graph is not copied
 * yet is "awaiting" and puts nothing in the window. The layout and the copy: docs/sparql-replica.md.
 */
export class ReplicaStore extends OxigraphIndex {
  private readonly objects = new Map<string, Latest>();
  private readonly window: HistoryWindow;
  private readonly isObject = (graph: string) => this.objects.has(graph);
  /**
   * While a copy is under way: the objects whose graph it has not brought yet, and for the others the revision their
   * copy held.
   */
  private readonly awaiting = new Set<string>();
  private readonly copiedAt = new Map<string, number>();
  private readonly queryReserveBytes: number;
  /**
   * The triples (`s p o`) of the latest revision of objects that had a revision replaced, kept up to
   * date by the records' lines, so that replacing the next one copies these rather than read the
   * object's graph: Oxigraph keeps a graph's deleted quads in the lists that read walks, so it costs
   * every change the object ever had. Bounded in characters; an object not kept is read from its graph.
   */
  private readonly latestTriples = new BoundedCache<string, Set<string>>(LATEST_CHARACTERS_KEPT, (triples) => {
    let characters = 0;
    for (const t of triples) characters += t.length;
    return characters;
  });
  /** Quads deleted so far: Oxigraph keeps their memory while the store lives (only a new copy gives it back). */
  deletedQuads = 0;
  /**
   * Quads loaded so far, whether they were there already or were deleted since: what Oxigraph's tables have grown to
   * hold (see table-growth.ts).
   */
  loadedQuads = 0;
  /**
   * A growth point its tables could not be grown past (its memory being short): a new copy would not be either, so it
   * is not asked for.
   */
  private shortOfRoomFor = 0;

  /**
   * `queryReserveBytes`: WASM memory kept free for queries (their intermediate results) and
   * Oxigraph's tables as they grow; `memoryLimitBytes`: the size the WASM memory may grow to (its
   * data and that reserve), at most the 4 GiB WASM32 can address.
   */
  constructor(
    historyMaxQuads: number,
    queryReserveBytes = QUERY_RESERVE_BYTES,
    private readonly memoryLimitBytes = WASM_MEMORY_LIMIT_BYTES,
    /** The growth points that count as long (tests make them short). */
    private readonly longGrowthFrom = LONG_GROWTH_FROM,
  ) {
    super(queryReserveBytes);
    this.queryReserveBytes = queryReserveBytes;
    this.window = new HistoryWindow(historyMaxQuads);
  }

  /**
   * Applies journal records in order. Their insertions are loaded together, in one `load()` per
   * batch; a record whose deletions (or whose replaced revision) concern a graph that insertions
   * still waiting go into has them loaded first. Deleting from a union a quad that a waiting
   * insertion puts back is harmless: the insertion comes after.
   */
  applyRecords(records: readonly ReplicaRecord[]): void {
    const pending = new PendingLines();
    for (const record of records) {
      const lines = splitLines(record.insert);
      const revisions = this.newRevisions(lines);
      const deletions = splitLines(record.delete).filter((line) => this.unionKind(graphOf(line)) !== undefined);
      const replacing = this.window.open ? revisions.filter((r) => r.replaces !== undefined) : [];
      if (
        deletions.some((line) => pending.graphs.has(graphOf(line))) ||
        replacing.some((r) => pending.graphs.has(r.object))
      )
        this.load(pending.take());
      const links: string[] = [];
      for (const revision of replacing) this.replace(revision, pending, links);
      this.keepLatest(deletions, lines);
      this.remove(deletions, links);
      this.toInsert(lines, pending);
      if (!this.window.open) continue;
      for (const { object, number, meta } of revisions) {
        pending.lines.push(...meta, latestLink(object, number));
        pending.graphs.add(object);
      }
    }
    this.load(pending.take());
    this.evict();
  }

  /**
   * The first part of a new replica's copy of the hot store: the metadata graph (N-Quads of revision 1 and the latest
   * revision of each object).
   */
  copyMeta(nquads: string): void {
    const out = new PendingLines();
    for (const { object, number, meta } of this.newRevisions(splitLines(nquads))) {
      this.awaiting.add(object);
      // Only the latest revision is in the revisions view until the history copy brings the others.
      if (!this.window.open || this.objects.get(object)?.number !== number) continue;
      out.lines.push(...meta, latestLink(object, number));
    }
    this.load(out.take());
  }

  /**
   * A part of a new replica's copy of the hot store: some of its graphs (objects, events, action requests, grants) as
   * N-Quads.
   */
  copyHot(nquads: string): void {
    const lines = splitLines(nquads);
    const out = new PendingLines();
    this.toInsert(lines, out);
    for (const graph of out.graphs) {
      const latest = this.objects.get(graph);
      if (!latest || !this.awaiting.delete(graph)) continue;
      this.copiedAt.set(graph, latest.number);
    }
    this.load(out.take());
  }

  /**
   * A part of a new replica's copy of the history window, from the archive, newest first: each
   * entry the N-Quads of one revision (its graph and its metadata) or of one finished request.
   * A revision is taken only if it is older than the one its object's copied graph held (the
   * later ones enter the window as they are replaced), and a graph the window holds already is not.
   */
  copyHistory(entries: readonly string[]): void {
    const out: string[] = [];
    for (const entry of entries) {
      const lines = splitLines(entry);
      const named = this.historyEntry(lines);
      if (!named || this.window.has(named.graph)) continue;
      let quads = 0;
      for (const line of lines) {
        const kind = replicaGraph(graphOf(line), this.isObject)?.kind;
        if (kind === 'audit') out.push(`${tripleOf(line)} ${iri(LAYOUT.auditUnion)} .\n`);
        else if (kind !== 'revision' && kind !== 'meta') continue;
        out.push(`${line}\n`);
        quads++;
      }
      out.push(membership(named.graph, named.kind === 'revision' ? 'revisions' : 'audit'));
      this.window.addCopied({ ...named, quads });
    }
    this.load(out);
    this.evict();
  }

  /** The copy is complete: every object's graph is whole from now on. */
  copied(): void {
    this.awaiting.clear();
    this.copiedAt.clear();
  }

  /**
   * The long growth point the replica is near (it should be handed over to a new copy before it gets there), if any.
   */
  growthAhead(): number | undefined {
    return handoverPoint(this.loadedQuads, this.longGrowthFrom, this.shortOfRoomFor);
  }

  /**
   * Grows a new copy's tables past its next long growth point (when the copy took it past half of it)
   * or past `handedOverFor` (the point the replica it takes over from was near), by quads loaded into a
   * graph no view shows and dropped at once, so that it is not handed over again soon after. Counted
   * from the quads held, not loaded (a quad loaded twice takes one table entry); skipped when the memory
   * could not take these quads beside its reserve. Answers what it did, if it had a point to grow past.
   */
  growPastNextPoint(handedOverFor = 0): { point: number; quads: number; grown: boolean } | undefined {
    const target = growthTarget(this.loadedQuads, this.size, handedOverFor, this.longGrowthFrom);
    if (!target) return undefined;
    const { point, quads } = target;
    const room = quads * paddingLine(quads).length * WASM_BYTES_PER_TEXT_BYTE;
    if (this.wasmMemoryBytes + room > this.memoryLimitBytes || !this.canTake(room + this.queryReserveBytes)) {
      this.shortOfRoomFor = point;
      return { point, quads, grown: false };
    }
    for (const lines of paddingChunks(quads)) this.load(lines);
    this.dropGraphs([LAYOUT.padding]);
    this.deletedQuads += quads;
    return { point, quads, grown: true };
  }

  /** The graph a history entry brings, and its kind; undefined when it is not to be taken (see copyHistory). */
  private historyEntry(lines: readonly string[]): { graph: string; kind: WindowEntry['kind'] } | undefined {
    for (const line of lines) {
      const graph = graphOf(line);
      const found = replicaGraph(graph, this.isObject);
      if (found?.kind === 'audit') return { graph, kind: 'request' };
      if (found?.kind !== 'revision') continue;
      const copiedAt = this.copiedAt.get(found.object);
      return copiedAt !== undefined && found.number < copiedAt ? { graph, kind: 'revision' } : undefined;
    }
    return undefined;
  }

  /**
   * The revisions the metadata lines among `lines` write, in order, each with the latest revision it replaces; each
   * object learnt with its latest number.
   */
  private newRevisions(lines: readonly string[]): NewRevision[] {
    const found = new Map<string, NewRevision>();
    const tail = ` ${iri(bookkeeping.metaGraph)} .`;
    for (const line of lines) {
      if (!line.endsWith(tail) || !line.startsWith('<')) continue;
      const subject = line.slice(1, line.indexOf('> '));
      const of = found.has(subject) ? undefined : revisionOfGraph(subject);
      if (of) found.set(subject, { ...of, meta: [] });
      found.get(subject)?.meta.push(`${line}\n`);
    }
    const revisions = [...found.values()].sort((a, b) => a.number - b.number);
    for (const revision of revisions) {
      const latest = this.objects.get(revision.object);
      if (latest && latest.number >= revision.number) continue;
      revision.replaces = latest;
      this.objects.set(revision.object, { number: revision.number, meta: revision.meta.length });
    }
    return revisions;
  }

  /**
   * A revision replaces its object's latest: that one enters the history window whole, as the
   * object's graph holds it before the record's deletions (its metadata is in the store already),
   * and the link to the latest revision's name goes. An object whose graph the copy has not brought
   * yet has nothing whole to copy: its replaced revision leaves the revisions view (the archive copy
   * brings it back, within the window's bound).
   */
  private replace({ object, replaces }: NewRevision, out: PendingLines, links: string[]): void {
    const { number, meta } = replaces!;
    const graph = revisionGraph(object, number);
    links.push(latestLink(object, number));
    if (this.awaiting.has(object)) {
      this.store.update(`DELETE WHERE { GRAPH ${iri(bookkeeping.metaGraph)} { ${iri(graph)} ?p ?o } }`);
      return;
    }
    const into = ` ${iri(graph)} .\n`;
    const kept = this.latestOf(object);
    for (const triple of kept) out.lines.push(triple + into);
    out.lines.push(membership(graph, 'revisions'));
    out.graphs.add(graph);
    this.window.add({ graph, quads: kept.size + meta, kind: 'revision' });
  }

  /**
   * The triples of an object's graph as it stands (before the record being applied): kept, or read from the graph and
   * kept from now on.
   */
  private latestOf(object: string): ReadonlySet<string> {
    let triples = this.latestTriples.get(object);
    if (!triples) {
      // In the records' own form (`tripleToNt`), which Oxigraph's dump need not share (escapes).
      triples = new Set(readStoreNTriples(this.graphNTriples(object)).map((t) => tripleToNt(t).slice(0, -3)));
      this.latestTriples.set(object, triples);
    }
    return triples;
  }

  /**
   * A record's deleted and inserted lines change the kept triples of the objects' graphs they are
   * in. A deletion of a triple not kept means the kept ones no longer match the graph (they never
   * should): that object is read from its graph again next time.
   */
  private keepLatest(deletions: readonly string[], insertions: readonly string[]): void {
    if (this.latestTriples.size === 0) return;
    for (const line of deletions) {
      const graph = graphOf(line);
      const triples = this.latestTriples.get(graph);
      if (triples && !triples.delete(tripleOf(line))) this.latestTriples.delete(graph);
    }
    for (const line of insertions) this.latestTriples.get(graphOf(line))?.add(tripleOf(line));
  }

  /** The lines to load for inserted N-Quads lines: in their graph, in their view's union, with the graph's views. */
  private toInsert(lines: readonly string[], out: PendingLines): void {
    const seen = new Set<string>();
    const finished = new Map<string, number>();
    // A record's lines come graph by graph: the kind of a graph is found once per run of its lines.
    let graph = '';
    let kind: UnionKind | undefined;
    for (let line of lines) {
      const archived = line.startsWith(ARCHIVE_LINE);
      if (archived) line = line.slice(ARCHIVE_LINE.length);
      const of = graphOf(line);
      if (of !== graph) {
        graph = of;
        kind = this.unionKind(graph);
      }
      if (!kind) continue;
      out.lines.push(`${line}\n`, `${tripleOf(line)} ${iri(UNION_OF[kind])} .\n`);
      if (!seen.has(graph)) {
        seen.add(graph);
        out.graphs.add(graph);
        for (const view of VIEWS_OF[kind]) out.lines.push(membership(graph, view));
      }
      // A finished request (its final content, kept for the audit view while it is in the window); an event, finished
      // as it is written, stays in the events view.
      if (archived && kind === 'audit') finished.set(graph, (finished.get(graph) ?? 0) + 1);
    }
    for (const [graph, quads] of finished)
      if (!this.window.has(graph)) this.window.add({ graph, quads, kind: 'request' });
  }

  /** Takes the oldest entries of the history window out while it holds more than its bound. */
  private evict(): void {
    const gone = this.window.overflow();
    if (gone.length === 0) return;
    const requests = gone.filter(({ kind }) => kind === 'request').map(({ graph }) => iri(graph));
    // A finished request's quads leave the audit union too, unless a graph that stays holds them.
    const leaving =
      requests.length === 0
        ? []
        : [
            unionDeletion(
              'audit',
              `VALUES ?leaving { ${requests.join(' ')} } GRAPH ?leaving { ?s ?p ?o }`,
              `FILTER (?g NOT IN (${requests.join(', ')}))`,
            ),
          ];
    const drops = gone.map(({ graph, kind }) => {
      const view = LAYOUT.view(kind === 'revision' ? 'revisions' : 'audit');
      return (
        `DROP SILENT GRAPH ${iri(graph)} ; DELETE WHERE { GRAPH ${iri(bookkeeping.metaGraph)} { ${iri(graph)} ` +
        `?p ?o } } ; DELETE DATA { GRAPH ${iri(LAYOUT.membership)} { ${iri(graph)} ${iri(LAYOUT.inView)} ` +
        `${iri(view)} } }`
      );
    });
    this.store.update([...leaving, ...drops].join(' ;\n'));
    for (const { quads, kind } of gone) this.deletedQuads += (kind === 'request' ? 2 * quads : quads) + 1;
  }

  /**
   * Deletes N-Quads lines (of graphs a union holds) from their graphs, and from the union of their
   * view unless another graph of that view still holds them, with `dropped` (lines of the replica's
   * own graphs): one SPARQL update, far cheaper than quad by quad.
   */
  private remove(lines: readonly string[], dropped: readonly string[] = []): void {
    if (lines.length === 0 && dropped.length === 0) return;
    const rows = new Map<UnionKind, string[]>();
    for (const line of lines) {
      const kind = this.unionKind(graphOf(line))!;
      entryOf(rows, kind, () => []).push(`(${tripleOf(line)})`);
    }
    const unions = [...rows].map(([kind, values]) => unionDeletion(kind, `VALUES (?s ?p ?o) { ${values.join(' ')} }`));
    this.store.update([deleteData([...lines, ...dropped].join('\n')), ...unions].join(' ;\n'));
    // Counted as if each left its union too: an estimate (of memory Oxigraph keeps), slightly high.
    this.deletedQuads += 2 * lines.length + dropped.length;
  }

  /**
   * The kind of graph whose quads a union holds; undefined for the window's revisions, the metadata and graphs no view
   * shows.
   */
  private unionKind(graph: string): UnionKind | undefined {
    const kind = replicaGraph(graph, this.isObject)?.kind;
    return kind === 'object' || kind === 'event' || kind === 'audit' ? kind : undefined;
  }

  private load(lines: readonly string[]): void {
    if (lines.length === 0) return;
    // As bytes: the bindings copy a string into WASM memory a character at a time, far slower than encoding it here.
    const bytes = Buffer.from(lines.join(''));
    // Oxigraph aborts when its memory runs out mid-load: data that may not fit is refused before it goes in.
    // Room is made in large steps that grow the memory ahead of need: past the limit, the step taken is refused too.
    if (!this.makeRoom(bytes.byteLength) || this.wasmMemoryBytes > this.memoryLimitBytes)
      throw new ReplicaFullError(this.wasmMemoryBytes, this.queryReserveBytes, this.memoryLimitBytes);
    this.store.load(bytes, { format: NQUADS, lenient: true });
    this.loadedQuads += lines.length;
  }

  /** Runs a query over its view (or the part of it `job.dataset` names); `position` is filled in by the caller. */
  run(job: QueryJob): Omit<QueryAnswer, 'position'> {
    return runOnReplica(this.store, job, (iris, view) => this.graphsIn(iris, view));
  }

  /** Whether `graph` is one of the named graphs of `view`. */
  private inView(graph: string, view: View): boolean {
    return (
      this.store.match(
        oxigraph.namedNode(graph),
        oxigraph.namedNode(LAYOUT.inView),
        oxigraph.namedNode(LAYOUT.view(view)),
        oxigraph.namedNode(LAYOUT.membership),
      ).length > 0
    );
  }

  /**
   * The graphs of `iris` that `view` holds (an object's latest revision, named as in the revisions
   * view: its object's graph, which the query's GRAPH patterns find by the link); a graph no store
   * holds when there are none (an empty list would mean "no restriction").
   */
  private graphsIn(iris: readonly string[], view: View) {
    const held = iris.flatMap((graph) =>
      this.inView(graph, view) ? [graph] : view === 'revisions' ? this.latestNamed(graph) : [],
    );
    return (held.length > 0 ? held : [LAYOUT.empty]).map((graph) => oxigraph.namedNode(graph));
  }

  /** The object whose latest revision `graph` names, in the revisions view (none when the window is off). */
  private latestNamed(graph: string): string[] {
    const revision = revisionOfGraph(graph);
    return this.window.open && revision && this.objects.get(revision.object)?.number === revision.number
      ? [revision.object]
      : [];
  }
}
