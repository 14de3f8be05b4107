import sparqljs from 'sparqljs';
import { BoundedCache } from '../../../bounded-cache.js';
import { readStoreNTriples } from '../../../rdf/ntriples.js';
import { tripleToNt } from '../../../rdf/terms.js';
import { store as bookkeeping, xsd } from '../../../rdf/vocab.js';
import {
  deleteData,
  OxigraphIndex,
  oxigraph,
  WASM_BYTES_PER_TEXT_BYTE,
  WASM_MEMORY_LIMIT_BYTES,
} from '../oxigraph/oxigraph-index.js';
import type { SparqlJsonResults } from '../../readers.js';
import type { QueryAnswer, QueryJob } from './messages.js';
import type { View } from '../../query-service.js';
import { LAYOUT, replicaGraph } from './replica-layout.js';
import { ARCHIVE_LINE } from '../../schema/finished-graphs.js';
import { revisionGraph, revisionOfGraph } from '../../schema/revisions.js';
import { RESULT_MEDIA_TYPES } from '../../sparql-query.js';
import { writeSolutions } from '../../sparql-results.js';
import { LONG_GROWTH_FROM, nextGrowthPoint } from '../oxigraph/table-growth.js';

const NQUADS = 'application/n-quads';
const NTRIPLES = 'application/n-triples';
const iri = (value: string) => `<${value}>`;

/** Characters of the latest revisions kept for objects whose revisions entered the window (see `ReplicaStore.latestTriples`). */
const LATEST_CHARACTERS_KEPT = 32 * 1024 * 1024;

/**
 * A serving replica is handed over to a new copy once the quads it loaded reach this share of its
 * next long growth point (see table-growth.ts): the copy, which has none of the deleted quads, is
 * made while it goes on serving, so queries never wait on its tables growing (unless the copy
 * takes longer than the writes take to load the rest). The copy grows its tables past that point
 * (see growPastNextPoint), so each doubling costs one copy: the earlier it begins, the longer the
 * copy may take, and the sooner after the last handover it comes.
 */
export const HANDOVER_AT = 0.6;
/** A copy whose quads pass this share of its next long growth point grows its tables past it before it serves (see growPastNextPoint). */
const GROW_PAST_FROM = 0.5;
/**
 * How far past a growth point a copy's tables are grown, as a share of it: a copy grown just past the
 * point still paused soon after, as if one of its tables held fewer entries than quads.
 */
const GROWTH_MARGIN = 1 / 16;
/** Quads loaded at a time to grow the tables. */
const GROWTH_CHUNK = 20_000;

/** Default WASM memory the replica keeps free for queries. */
export const QUERY_RESERVE_BYTES = 256 * 1024 * 1024;

/** The replica's WASM memory (4 GiB at most, or its limit) cannot take what it is fed with its reserve for queries kept free: it stops there (see the worker). */
export class ReplicaFullError extends Error {
  constructor(wasmBytes: number, reserveBytes: number, limitBytes: number) {
    const mb = (bytes: number) => Math.round(bytes / 2 ** 20);
    const limit = limitBytes < WASM_MEMORY_LIMIT_BYTES ? ` of the ${mb(limitBytes)} MB it may take` : '';
    super(
      `the query replica's memory is full (${mb(wasmBytes)} MB of WebAssembly memory in use or reserved${limit}, ${mb(reserveBytes)} MB of it to stay free for queries)`,
    );
  }
}

/** A journal record as text: N-Quads lines deleted and inserted (archive lines among the latter, see finished-graphs.ts). */
export interface ReplicaRecord {
  insert: string;
  delete: string;
}

/** The graphs whose view's default graph is a union, and that union. */
type UnionKind = 'object' | 'event' | 'audit';
const UNION_OF: Readonly<Record<UnionKind, string>> = {
  object: LAYOUT.latestUnion,
  event: LAYOUT.eventsUnion,
  audit: LAYOUT.auditUnion,
};
const VIEWS_OF: Readonly<Record<UnionKind, readonly View[]>> = {
  object: ['latest', 'events'],
  event: ['events'],
  audit: ['audit'],
};

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
 * written since, so they leave first, from the end of their list. A graph enters once.
 */
class HistoryWindow {
  private readonly copied: WindowEntry[] = [];
  private live: WindowEntry[] = [];
  private head = 0;
  private quads = 0;
  private readonly graphs = new Set<string>();

  constructor(private readonly maxQuads: number) {}

  /** Whether the window holds anything at all (a bound of 0 turns history analytics off). */
  get open(): boolean {
    return this.maxQuads > 0;
  }

  has(graph: string): boolean {
    return this.graphs.has(graph);
  }

  addCopied(entry: WindowEntry): void {
    this.copied.push(entry);
    this.count(entry);
  }

  add(entry: WindowEntry): void {
    this.live.push(entry);
    this.count(entry);
  }

  private count(entry: WindowEntry): void {
    this.graphs.add(entry.graph);
    this.quads += entry.quads;
  }

  /** The oldest entries past the bound, taken out of the window. */
  overflow(): WindowEntry[] {
    const out: WindowEntry[] = [];
    while (this.quads > this.maxQuads) {
      const entry = this.copied.pop() ?? this.live[this.head++];
      if (!entry) break;
      this.quads -= entry.quads;
      this.graphs.delete(entry.graph);
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

/** An object's latest revision: its number, and the quads of its metadata. */
interface Latest {
  number: number;
  meta: number;
}

/** A revision a record writes: its object and number, its metadata lines (N-Quads in the metadata graph), and the revision it replaces. */
interface NewRevision {
  object: string;
  number: number;
  meta: string[];
  replaces?: Latest;
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
 * - the history window: the revisions before the latest, whole (`{object}?revision={n}`: the
 *   object's graph copied as it stands when the next revision replaces it), and the newest
 *   finished action requests (the record that finishes one carries its final content), at most
 *   `historyMaxQuads` quads in all, the oldest leaving first. The latest revision of an object is
 *   held once, in the object's graph; the revisions view sees it under its revision's name
 *   through a link (`<object> replica:latestRevision <object?revision=n>`, see `scopedToView`).
 *   The metadata of every revision the view shows is in the metadata graph (its default graph).
 * Records are applied in order; the insertions of consecutive records are loaded together.
 *
 * A new replica copies the hot store while it keeps being written: the metadata graph first (which
 * objects there are, their latest revisions), then the other graphs a few at a time, then history
 * from the archive, with each commit applied in between in commit order. An object whose graph is
 * not copied yet is "awaiting": commits on it change its graph (the copy, taken later, holds their
 * result as well) but copy nothing into the window (its graph is not whole yet); the revisions
 * before the one its copy holds come from the archive (`copyHistory`), those after it are copied
 * when replaced.
 */
export class ReplicaStore extends OxigraphIndex {
  private readonly objects = new Map<string, Latest>();
  private readonly window: HistoryWindow;
  private readonly isObject = (graph: string) => this.objects.has(graph);
  /** While a copy is under way: the objects whose graph it has not brought yet, and for the others the revision their copy held. */
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
  /** Quads loaded so far, whether they were there already or were deleted since: what Oxigraph's tables have grown to hold (see table-growth.ts). */
  loadedQuads = 0;
  /** A growth point its tables could not be grown past (its memory being short): a new copy would not be either, so it is not asked for. */
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

  /** The first part of a new replica's copy of the hot store: the metadata graph (N-Quads of revision 1 and the latest revision of each object). */
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

  /** A part of a new replica's copy of the hot store: some of its graphs (objects, events, action requests, grants) as N-Quads. */
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

  /** The long growth point the replica is near (it should be handed over to a new copy before it gets there), if any. */
  growthAhead(): number | undefined {
    const point = nextGrowthPoint(this.loadedQuads);
    return point >= this.longGrowthFrom && point > this.shortOfRoomFor && this.loadedQuads >= HANDOVER_AT * point
      ? point
      : undefined;
  }

  /**
   * Grows a new copy's tables past its next long growth point (when the copy took it past half of it)
   * or past `handedOverFor` (the point the replica it takes over from was near), by quads loaded into a
   * graph no view shows and dropped at once, so that it is not handed over again soon after. Counted
   * from the quads held, not loaded (a quad loaded twice takes one table entry); skipped when the memory
   * could not take these quads beside its reserve. Answers what it did, if it had a point to grow past.
   */
  growPastNextPoint(handedOverFor = 0): { point: number; quads: number; grown: boolean } | undefined {
    const next = nextGrowthPoint(this.loadedQuads);
    const point = Math.max(handedOverFor, this.loadedQuads >= GROW_PAST_FROM * next ? next : 0);
    if (point < this.longGrowthFrom) return undefined;
    const past = Math.ceil(point * (1 + GROWTH_MARGIN));
    const held = this.size;
    if (past < held) return undefined;
    const quads = past + 1 - held;
    const padding = iri(LAYOUT.padding);
    // Integers are held in the quad itself: no string to store for them.
    const line = (i: number) => `${padding} ${padding} "${i}"^^${iri(xsd.integer)} ${padding} .\n`;
    const room = quads * line(quads).length * WASM_BYTES_PER_TEXT_BYTE;
    if (this.wasmMemoryBytes + room > this.memoryLimitBytes || !this.canTake(room + this.queryReserveBytes)) {
      this.shortOfRoomFor = point;
      return { point, quads, grown: false };
    }
    for (let done = 0; done < quads; done += GROWTH_CHUNK) {
      const lines: string[] = [];
      for (let i = done; i < Math.min(quads, done + GROWTH_CHUNK); i++) lines.push(line(i));
      this.load(lines);
    }
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

  /** The revisions the metadata lines among `lines` write, in order, each with the latest revision it replaces; each object learnt with its latest number. */
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
      }
      revision.meta.push(`${line}\n`);
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

  /** The triples of an object's graph as it stands (before the record being applied): kept, or read from the graph and kept from now on. */
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
      // A finished request (its final content, kept for the audit view while it is in the window).
      if (archived) finished.set(graph, (finished.get(graph) ?? 0) + 1);
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
      return `DROP SILENT GRAPH ${iri(graph)} ; DELETE WHERE { GRAPH ${iri(bookkeeping.metaGraph)} { ${iri(graph)} ?p ?o } } ; DELETE DATA { GRAPH ${iri(LAYOUT.membership)} { ${iri(graph)} ${iri(LAYOUT.inView)} ${iri(view)} } }`;
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
      let list = rows.get(kind);
      if (!list) rows.set(kind, (list = []));
      list.push(`(${tripleOf(line)})`);
    }
    const unions = [...rows].map(([kind, values]) => unionDeletion(kind, `VALUES (?s ?p ?o) { ${values.join(' ')} }`));
    this.store.update([deleteData([...lines, ...dropped].join('\n')), ...unions].join(' ;\n'));
    // Counted as if each left its union too: an estimate (of memory Oxigraph keeps), slightly high.
    this.deletedQuads += 2 * lines.length + dropped.length;
  }

  /** The kind of graph whose quads a union holds; undefined for the window's revisions, the metadata and graphs no view shows. */
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
    const text = scopedToView(
      job.text,
      job.view,
      (probe) =>
        (
          JSON.parse(
            this.store.query(probe, { results_format: RESULT_MEDIA_TYPES.json }) as string,
          ) as SparqlJsonResults
        ).head.vars,
    );
    if (job.form === 'SELECT') {
      const results = JSON.parse(
        this.store.query(text, { ...options, results_format: RESULT_MEDIA_TYPES.json }) as string,
      ) as SparqlJsonResults;
      const truncated = results.results.bindings.length > job.maxRows;
      if (truncated) results.results.bindings.length = job.maxRows;
      return { body: writeSolutions(results, job.format as 'json'), truncated };
    }
    if (job.form === 'ASK')
      return {
        body: this.store.query(text, { ...options, results_format: RESULT_MEDIA_TYPES[job.format] }) as string,
        truncated: false,
      };
    const ntriples = this.store.query(text, { ...options, results_format: NTRIPLES }) as string;
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

function inViewOf(view: View): string {
  return `GRAPH ${iri(LAYOUT.membership)} { ?g ${iri(LAYOUT.inView)} ${iri(LAYOUT.view(view))} }`;
}

/**
 * A SPARQL update that takes the triples `?s ?p ?o` that `triples` binds out of the union of `kind`,
 * unless a graph of that kind (`others` narrowing which) still holds them.
 */
function unionDeletion(kind: UnionKind, triples: string, others = ''): string {
  return `DELETE { GRAPH ${iri(UNION_OF[kind])} { ?s ?p ?o } } WHERE { ${triples} FILTER NOT EXISTS { GRAPH ?g { ?s ?p ?o } ${OF_KIND[kind]} ${others} } }`;
}

const membership = (graph: string, view: View) =>
  `${iri(graph)} ${iri(LAYOUT.inView)} ${iri(LAYOUT.view(view))} ${iri(LAYOUT.membership)} .\n`;
/** The name an object's latest graph has in the revisions view. */
const latestLink = (object: string, number: number) =>
  `${iri(object)} ${iri(LAYOUT.latestRevision)} ${iri(revisionGraph(object, number))} ${iri(LAYOUT.membership)} .\n`;

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

/**
 * The query with each `GRAPH g { … }` joined with "g is a graph of `view`": the replica's store
 * holds the graphs of every view (and its own), and a query sees those of its view only. In the
 * revisions view, `GRAPH g { P }` also finds each object's latest revision, held in the object's
 * graph: `{ GRAPH g { P } g in revisions } UNION { GRAPH ?l { P } ?l latestRevision g }`, with `?l`
 * a variable of its own; a `SELECT *` gets the variables the query projected before (`projected`
 * answers them for the query with LIMIT 0), so that `?l` stays out of its answer.
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
        if (view !== 'revisions') {
          node[i] = inView;
          return;
        }
        const held = latestVariable();
        const link = {
          type: 'graph',
          name: term(LAYOUT.membership),
          patterns: [
            { type: 'bgp', triples: [{ subject: held, predicate: term(LAYOUT.latestRevision), object: item.name }] },
          ],
        };
        const latest = { type: 'group', patterns: [{ ...structuredClone(item), name: held }, link] };
        node[i] = { type: 'union', patterns: [inView, latest] };
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
