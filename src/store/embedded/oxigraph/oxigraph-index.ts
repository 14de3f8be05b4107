import { partBytes, partText, startsComment, type CommitRecord, type CommitBytes } from '../../commit-record.js';
import { iriToNt } from '../../../rdf/terms.js';
import type { SparqlJsonResults } from '../../readers.js';
import {
  canAllocate,
  loadOxigraphBindings,
  storeAt,
  storePointer,
  WASM_MEMORY_LIMIT_BYTES,
  type OxigraphBindings,
} from './oxigraph-bindings.js';
import { entryOf } from '../../../map-entry.js';

const NQUADS = 'application/n-quads';
const NTRIPLES = 'application/n-triples';
const NEWLINE = 0x0a;

/**
 * The length of the leading part of N-Quads text (or its UTF-8 bytes) holding every line neither empty
 * nor a comment, 0 when none: what Oxigraph must parse of a record's insertions, since parsing the
 * archive lines after its quads (comments, see finished-graphs.ts) would double a PATCH's load.
 */
export function quadsEnd(nquads: string | Uint8Array): number {
  const text = typeof nquads === 'string' ? nquads : partBytes(nquads);
  // From the last line back: a record without archive lines is decided by its last line alone.
  for (let end = text.length; end > 0; ) {
    // The line ending at `end` (its newline included) starts after the newline before it.
    const start =
      end < 2
        ? 0
        : (typeof text === 'string' ? text.lastIndexOf('\n', end - 2) : text.lastIndexOf(NEWLINE, end - 2)) + 1;
    const first = typeof text === 'string' ? text.charCodeAt(start) : text[start];
    if (!startsComment(first) && first !== NEWLINE) return end;
    end = start;
  }
  return 0;
}

/** The leading `length` characters or bytes of a record's part (a view of the bytes, not a copy). */
const leading = (part: string | Uint8Array, length: number) =>
  typeof part === 'string' ? part.slice(0, length) : part.subarray(0, length);

const initialBindings = loadOxigraphBindings();
/** The first instance of the oxigraph bindings (the SPARQL replica's thread builds its store with them too). */
export const oxigraph = initialBindings.oxigraph;
export { WASM_MEMORY_LIMIT_BYTES };

/*
 * The index grows Oxigraph's WASM memory ahead of need, in one large untouched step, because each
 * small growth makes V8 run a full garbage collection. The same probe refuses data, before anything is
 * written, when the 4 GiB of WASM32 memory could not take it plus a reserve for queries, dumps and
 * table resizing: an allocation failing inside Oxigraph traps and leaves the instance unusable.
 */
/** WASM bytes one byte of loaded N-Quads text may take, kept above what was measured. */
export const WASM_BYTES_PER_TEXT_BYTE = 4;
const GROWTH_STEP_MIN = 64 * 1024 * 1024;
const GROWTH_STEP_MAX = 256 * 1024 * 1024;

/**
 * One N-Quads line of ours (`S P O [G] .`, IRIs without spaces) split as SPARQL writes it: N-Quads
 * terms are written as SPARQL writes them, only the graph moves to a GRAPH block.
 */
function splitQuadLine(line: string): { subject: string; predicateObject: string; graph: string } {
  const subjectEnd = line.indexOf(' ');
  const predicateEnd = line.indexOf(' ', subjectEnd + 1);
  let i = predicateEnd + 1;
  if (line[i] === '"') {
    for (i += 1; i < line.length && line[i] !== '"'; i += line[i] === '\\' ? 2 : 1);
    i += 1;
    if (line[i] === '@' || line[i] === '^') i = line.indexOf(' ', i);
  } else {
    i = line.indexOf(' ', i);
  }
  // `i` is at the space after the object: then either ` .` or ` <graph> .`.
  return {
    subject: line.slice(0, subjectEnd),
    predicateObject: line.slice(subjectEnd + 1, i),
    graph: line.slice(i + 1, line.length - 2),
  };
}

/**
 * Our N-Quads lines as one SPARQL update that deletes them, grouped by graph and then by subject:
 * parsing the update is most of what a deletion costs, and each graph and subject is then read once.
 */
export function deleteData(nquads: string): string {
  const graphs = new Map<string, Map<string, string[]>>();
  for (const line of nquads.split('\n')) {
    if (line === '') continue;
    const { subject, predicateObject, graph } = splitQuadLine(line);
    const subjects = entryOf(graphs, graph, () => new Map<string, string[]>());
    entryOf(subjects, subject, () => []).push(predicateObject);
  }
  const blocks: string[] = [];
  for (const [graph, subjects] of graphs) {
    const triples: string[] = [];
    for (const [subject, pairs] of subjects) triples.push(`${subject} ${pairs.join(' ;\n')} .`);
    blocks.push(graph === '' ? triples.join('\n') : `GRAPH ${graph} {\n${triples.join('\n')}\n}`);
  }
  return `DELETE DATA {\n${blocks.join('\n')}\n}`;
}

type OxigraphStore = InstanceType<OxigraphBindings['oxigraph']['Store']>;

/** Gives a store's WASM memory back to its allocator (the bindings have `free` but do not declare it). */
function freeStore(store: OxigraphStore): void {
  (store as unknown as { free(): void }).free();
}

/** Told of every change made to an index, after it was made. */
export interface IndexFollower {
  applied(record: CommitRecord | CommitBytes): void;
  loaded(nquads: string | Uint8Array | Uint8Array[]): void;
  dropped(graphs: readonly string[]): void;
}

/**
 * The in-memory Oxigraph store, used as an index that is rebuilt from snapshot + journal at
 * start. Results come back as strings (N-Triples, SPARQL JSON) so no WASM-held term objects
 * pile up on hot paths.
 */
export class OxigraphIndex {
  private bindings: OxigraphBindings;
  protected store: OxigraphStore;
  /** Told of every change after it is made here (a compaction filling its copy of this index). */
  private follower: IndexFollower | undefined;
  /** Estimated free WASM memory beyond the reserve, and how much has been reserved in all. */
  private headroom = 0;
  private reserved = 0;
  /** The reserve that was kept free when the headroom was granted. */
  private headroomReserve = 0;

  /**
   * `memoryReserveBytes`: WASM memory that data may never take (see makeRoom). `bindings`: the
   * oxigraph instance whose WASM memory holds the store (a compaction copies into a new one).
   * `storeAtPointer`: the store already in that memory (restored from an image), else a new one.
   */
  constructor(
    private readonly memoryReserveBytes = 0,
    bindings = initialBindings,
    storeAtPointer?: number,
  ) {
    this.bindings = bindings;
    this.store = storeAtPointer === undefined ? new bindings.oxigraph.Store() : storeAt(bindings, storeAtPointer);
  }

  /**
   * The WASM instance holding the store, and where the store is in its memory (for a memory image, see index-image.ts).
   */
  get memory(): { bindings: OxigraphBindings; storePointer: number } {
    return { bindings: this.bindings, storePointer: storePointer(this.store) };
  }

  /** Counts every quad: O(n), for logs at start and after snapshots, not for hot paths. */
  get size(): number {
    return this.store.size;
  }

  /** Bytes of the WASM linear memory (grown ahead of need, see keepHeadroom). */
  get wasmMemoryBytes(): number {
    return this.bindings.allocator.memory.buffer.byteLength;
  }

  /**
   * Applies a journal record. Live writes and replay take this same path, so a record that was
   * applied before a crash is applied the same way after it. Insertions load leniently (no IRI
   * syntax checks) because records are our own serialisation: a strict check that could fail
   * here, after the record is durable, would make it a record that fails at every start.
   */
  apply(record: CommitRecord | CommitBytes): void {
    // Insertions first (load() is atomic), then the deletions as one SPARQL DELETE DATA, cheaper than
    // quad by quad. The order matters where two lexical forms are one stored value: inserting "01" and
    // deleting "1" leaves it absent (as fold.ts folds). A deletion Oxigraph refuses fails the record after
    // its insertions, and the caller takes no further write (DurableStore.applyDurable). Only the part
    // holding quads is handed over (quadsEnd): a record of comments alone loads nothing.
    const quadsLength = quadsEnd(record.insert);
    if (quadsLength > 0) this.loadLenient(leading(record.insert, quadsLength));
    if (record.delete.length > 0) this.store.update(deleteData(partText(record.delete)));
    this.follower?.applied(record);
  }

  /** Loads our own N-Quads (records, snapshots), as text or UTF-8 bytes, without re-validating IRIs. */
  loadTrusted(nquads: string | Uint8Array | Uint8Array[]): void {
    this.loadLenient(nquads);
    this.follower?.loaded(nquads);
  }

  private loadLenient(nquads: string | Uint8Array | Uint8Array[]): void {
    this.store.load(nquads, { format: NQUADS, lenient: true });
  }

  /**
   * Makes room for `textBytes` of N-Quads about to be loaded: true when the WASM memory can take
   * them with the reserve still free (growing it in one large step when the estimate runs low),
   * false when it cannot, and then nothing is counted. Called before a write is journaled and
   * before each chunk loaded at start, so data that does not fit is refused, never half-loaded.
   */
  makeRoom(textBytes: number, reserveBytes = this.memoryReserveBytes): boolean {
    const needed = textBytes * WASM_BYTES_PER_TEXT_BYTE;
    // Headroom granted with a smaller reserve free (at start) does not count for a larger one.
    if (reserveBytes <= this.headroomReserve && this.headroom - needed > GROWTH_STEP_MIN / 4) {
      this.headroom -= needed;
      return true;
    }
    const step = Math.min(GROWTH_STEP_MAX, Math.max(GROWTH_STEP_MIN, this.reserved / 2, needed));
    // Near the end of the address space a full step may not fit any more: then only what this data needs.
    const granted = [step, needed].find((size) => canAllocate(this.bindings, reserveBytes + size));
    if (granted === undefined) return false;
    this.headroom = granted - needed;
    this.headroomReserve = reserveBytes;
    this.reserved += granted;
    return true;
  }

  /** Whether the WASM memory could hand out `bytes` more now (growing it if it must, untouched). */
  canTake(bytes: number): boolean {
    return canAllocate(this.bindings, bytes);
  }

  /** One graph as N-Triples text (empty string if the graph is empty or unknown). */
  graphNTriples(graph: string): string {
    return this.store.dump({ format: NTRIPLES, from_graph_name: this.bindings.oxigraph.namedNode(graph) });
  }

  /** Every quad as N-Quads text: for small stores only (one string in WASM memory and in JS). */
  nQuads(): string {
    return this.store.dump({ format: NQUADS });
  }

  /** Gives the store's WASM memory back to the allocator; the index is unusable after. */
  free(): void {
    freeStore(this.store);
  }

  /** The default graph as N-Triples text (stored data normally keeps it empty). */
  defaultGraphNTriples(): string {
    return this.store.dump({ format: NTRIPLES, from_graph_name: this.bindings.oxigraph.defaultGraph() });
  }

  select(sparql: string): SparqlJsonResults {
    return JSON.parse(
      this.store.query(sparql, { results_format: 'application/sparql-results+json' }) as string,
    ) as SparqlJsonResults;
  }

  /**
   * Removes named graphs with their quads: deleting a graph's last quad leaves its name in Oxigraph's list of graphs.
   */
  dropGraphs(graphs: readonly string[]): void {
    if (graphs.length > 0) this.store.update(graphs.map((g) => `DROP SILENT GRAPH ${iriToNt(g)}`).join(' ;\n'));
    this.follower?.dropped(graphs);
  }

  /** Drops those of `graphs` that hold no quad (see dropGraphs). */
  dropEmptyGraphs(graphs: readonly string[]): void {
    if (graphs.length === 0) return;
    const empty = this.select(
      `SELECT ?g WHERE { VALUES ?g { ${graphs.map(iriToNt).join(' ')} } FILTER NOT EXISTS { GRAPH ?g { ?s ?p ?o } } }`,
    );
    this.dropGraphs(empty.results.bindings.map((b) => b.g.value));
  }

  /** Has `follower` told of every change from now on (one at a time; undefined stops it). */
  follow(follower: IndexFollower | undefined): void {
    if (follower && this.follower) throw new Error('the index already has a follower');
    this.follower = follower;
  }

  /**
   * Takes over `copy`'s store and WASM instance (a compacted copy of this index, see compaction.ts)
   * and frees its own store: its memory goes back to its allocator, and the old WASM instance, no
   * longer referenced, with it once garbage collected. `copy` is unusable after.
   */
  takeOver(copy: OxigraphIndex): void {
    const old = this.store;
    this.store = copy.store;
    this.bindings = copy.bindings;
    this.headroom = copy.headroom;
    this.reserved = copy.reserved;
    this.headroomReserve = copy.headroomReserve;
    freeStore(old);
  }

  listGraphs(): string[] {
    return this.select('SELECT ?g WHERE { GRAPH ?g { } }').results.bindings.map((b) => b.g.value);
  }
}
