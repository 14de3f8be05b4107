import { ntriplesInGraph } from '../../../rdf/ntriples.js';
import { loadOxigraphBindings } from '../oxigraph/oxigraph-bindings.js';
import type { CommitRecord, CommitBytes } from '../../commit-record.js';
import { OxigraphIndex, type IndexFollower } from '../oxigraph/oxigraph-index.js';

/** N-Quads text gathered from copied graphs before one load into the copy. */
const LOAD_BATCH_CHARS = 1024 * 1024;
/** CPU time one step of copying may take before the event loop gets its turn. */
const STEP_MILLIS = 10;

/**
 * A copy of an index in a new WASM instance, the only way to give back the memory of deleted quads
 * (Oxigraph keeps it, and a WASM memory never shrinks). Filled graph by graph in short steps while the
 * index serves, with every change to the index made to the copy too, whether its graph was copied yet
 * or not (loading a quad again changes nothing); once every graph is copied, the index takes it over.
 */
export class IndexCopy implements IndexFollower {
  private readonly copy = new OxigraphIndex(0, loadOxigraphBindings());
  /** Graphs to copy, in order. */
  private readonly queue: string[];
  private next = 0;
  /** Why following the index failed: the copy is then given up at its next step (the index is never failed by it). */
  private broken: Error | undefined;

  constructor(private readonly source: OxigraphIndex) {
    this.queue = source.listGraphs();
    this.load(source.defaultGraphNTriples());
    source.follow(this);
  }

  /** Graphs copied so far. */
  get graphsCopied(): number {
    return this.next;
  }

  /** Copies graphs for about `millis`; true once all are copied and the index has taken the copy over. */
  step(millis = STEP_MILLIS): boolean {
    if (this.broken) throw this.broken;
    const until = performance.now() + millis;
    let batch = '';
    // At least one graph a step, however short the step.
    while (this.next < this.queue.length) {
      const graph = this.queue[this.next++];
      batch += ntriplesInGraph(this.source.graphNTriples(graph), graph);
      if (batch.length >= LOAD_BATCH_CHARS) {
        this.load(batch);
        batch = '';
      }
      if (performance.now() >= until) break;
    }
    this.load(batch);
    if (this.next < this.queue.length) return false;
    this.source.follow(undefined);
    this.source.takeOver(this.copy);
    return true;
  }

  /** Stops following the index and frees the copy. */
  abandon(): void {
    this.source.follow(undefined);
    this.copy.free();
  }

  applied(record: CommitRecord | CommitBytes): void {
    this.follow(() => {
      this.grow(record.insert.length);
      this.copy.apply(record);
    });
  }

  loaded(nquads: string | Uint8Array | Uint8Array[]): void {
    this.follow(() => this.load(nquads));
  }

  dropped(graphs: readonly string[]): void {
    this.follow(() => this.copy.dropGraphs(graphs));
  }

  private follow(change: () => void): void {
    if (this.broken) return;
    try {
      change();
    } catch (err) {
      this.broken = err as Error;
    }
  }

  private load(nquads: string | Uint8Array | Uint8Array[]): void {
    const length = Array.isArray(nquads) ? nquads.reduce((sum, part) => sum + part.length, 0) : nquads.length;
    if (length === 0) return;
    this.grow(length);
    this.copy.loadTrusted(nquads);
  }

  /** Grows the copy's WASM memory ahead of need in large steps, as the index does (see OxigraphIndex.makeRoom). */
  private grow(chars: number): void {
    if (!this.copy.makeRoom(chars, 0)) throw new Error('the compacted copy does not fit in a WASM memory of its own');
  }
}

export interface CompactionOptions {
  /**
   * Quads deleted since the last compaction from which one starts, once they are also half the quads held (0: never).
   */
  afterDeletedQuads: number;
  /** The WASM memory that data may never take (store.memoryReserveBytes). */
  memoryReserveBytes: number;
  log(message: string): void;
}

/**
 * When a compaction pays: quads deleted since the last one (each leaves its memory behind) as a
 * share of the quads held. Half, normally: copying the live quads then costs two quad copies per
 * deleted quad. A tenth once the memory is nearly full (less than NEARLY_FULL_BYTES free beyond the
 * reserve, checked every CHECK_EVERY writes) or a write was refused for lack of it: even that frees
 * enough to go on, and the alternative is refusing writes.
 */
const DEAD_SHARE = 0.5;
const DEAD_SHARE_NEARLY_FULL = 0.1;
const NEARLY_FULL_BYTES = 1024 * 1024 * 1024;
const CHECK_EVERY = 1000;

/**
 * Compacts the hot index (IndexCopy) when deleted quads have taken enough of its WASM memory,
 * a step at a time between requests. The store tells it of every write (`written`) and of every
 * write refused for lack of memory (`memoryFull`). The WASM memory's size tells nothing here: the
 * index grows it ahead of need from estimates (OxigraphIndex.makeRoom), and it never shrinks.
 */
export class IndexCompactor {
  private deletedSince = 0;
  private writes = 0;
  private running: { copy: IndexCopy; started: number } | undefined;
  private timer: NodeJS.Immediate | undefined;

  constructor(
    private readonly index: OxigraphIndex,
    private readonly options: CompactionOptions,
  ) {}

  get compacting(): boolean {
    return this.running !== undefined;
  }

  /** After a write was applied: the quads it deleted, and the quads held now. */
  written(deleted: number, held: number): void {
    this.deletedSince += deleted;
    this.writes += 1;
    const { afterDeletedQuads, memoryReserveBytes } = this.options;
    if (this.running || afterDeletedQuads === 0) return;
    if (this.deletedSince >= Math.max(afterDeletedQuads, held * DEAD_SHARE)) this.start(held, 'deleted quads');
    else if (
      this.writes % CHECK_EVERY === 0 &&
      this.deletedSince >= held * DEAD_SHARE_NEARLY_FULL &&
      !this.index.canTake(memoryReserveBytes + NEARLY_FULL_BYTES)
    ) {
      this.start(held, 'memory nearly full');
    }
  }

  /** A write was refused for lack of WASM memory: compacting may free enough for the next ones. */
  memoryFull(held: number): void {
    if (!this.running && this.options.afterDeletedQuads > 0 && this.deletedSince >= held * DEAD_SHARE_NEARLY_FULL)
      this.start(held, 'memory full');
  }

  /** Stops a compaction under way (the index keeps its store). */
  stop(): void {
    clearImmediate(this.timer);
    this.running?.copy.abandon();
    this.running = undefined;
  }

  private start(held: number, why: string): void {
    this.options.log(
      `compacting the store (${why}): ${held} quads held, ${this.deletedSince} deleted since the last compaction`,
    );
    this.deletedSince = 0;
    this.running = { copy: new IndexCopy(this.index), started: performance.now() };
    this.timer = setImmediate(() => this.step());
  }

  private step(): void {
    const running = this.running;
    if (!running) return;
    let done: boolean;
    try {
      done = running.copy.step();
    } catch (err) {
      this.stop();
      this.options.log(`compaction stopped, the store goes on as it was: ${(err as Error).message}`);
      return;
    }
    if (!done) {
      this.timer = setImmediate(() => this.step());
      return;
    }
    this.running = undefined;
    const copied = running.copy.graphsCopied;
    this.options.log(
      `store compacted in ${Math.round(performance.now() - running.started)} ms: ${copied} graphs copied into a new ` +
        `WASM memory of ${Math.round(this.index.wasmMemoryBytes / 2 ** 20)} MiB (the old one is released once ` +
        `garbage collected)`,
    );
  }
}
