import { ntriplesInGraph } from '../../../rdf/ntriples.js';
import type { Worker } from 'node:worker_threads';
import type { FeedMessage, WorkerRequest } from './messages.js';

/**
 * What a new replica copies, as the store holds it at the moment it is asked (the graphs' and history's content is read
 * later, as it is copied).
 */
export interface ReplicaCopy {
  /** The revision metadata graph as N-Quads: it tells which graphs are objects, and their latest revisions. */
  meta: string;
  /**
   * The hot store's other graphs that a view shows, listed in a later turn than the metadata is
   * read in (the request thread is held for one at a time; commits made between reach the worker
   * as they do between the copy's other parts).
   */
  hotGraphs: () => string[];
  /**
   * The history in the archive before each object's latest revision, newest first: the N-Quads of one revision (its
   * graph and its metadata) or of one finished action request each.
   */
  history: Iterator<string>;
}

/** Where a new replica copies the store from. */
export interface ReplicaSource {
  copy(): ReplicaCopy;
  /** A graph of the hot store as N-Triples. */
  graphNTriples(graph: string): string;
}

/** Graphs copied to a loading worker between two turns of the event loop (keeps the API responsive while it loads). */
const GRAPHS_PER_TURN = 200;
/** Characters of history copied to a loading worker between two turns of the event loop. */
const HISTORY_CHARS_PER_TURN = 512 * 1024;

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

const countLines = (text: string) => {
  let lines = 0;
  for (let at = text.indexOf('\n'); at >= 0; at = text.indexOf('\n', at + 1)) lines++;
  return lines;
};

/** What a copy sent: the hot graphs, and the history entries and their quads. */
export interface CopySent {
  graphs: number;
  entries: number;
  quads: number;
}

/**
 * Sends a new worker `start`, then a copy of the hot store's graphs and of the newest history (up to
 * `historyMaxQuads` quads), a few at a time; the commits made meanwhile go to it in between, as they
 * come. The metadata is read and sent in the turn of the call, so the commits after it reach the
 * worker after it. Stops (undefined) as soon as the worker is no longer `fed`.
 */
export async function sendCopy(
  worker: Worker,
  source: ReplicaSource,
  start: Extract<FeedMessage, { kind: 'start' }>,
  fed: () => boolean,
): Promise<CopySent | undefined> {
  const { meta, hotGraphs: listHotGraphs, history } = source.copy();
  worker.postMessage(start satisfies WorkerRequest);
  worker.postMessage({ kind: 'meta', nquads: meta } satisfies WorkerRequest);
  await nextTurn();
  if (!fed()) return undefined;
  const hotGraphs = listHotGraphs();
  for (let i = 0; i < hotGraphs.length; i += GRAPHS_PER_TURN) {
    await nextTurn();
    if (!fed()) return undefined;
    const chunk = hotGraphs
      .slice(i, i + GRAPHS_PER_TURN)
      .map((graph) => ntriplesInGraph(source.graphNTriples(graph), graph));
    worker.postMessage({ kind: 'hot', nquads: chunk.join('') } satisfies WorkerRequest);
  }
  let quads = 0;
  let entries = 0;
  while (quads < start.historyMaxQuads) {
    await nextTurn();
    if (!fed()) return undefined;
    const chunk: string[] = [];
    let chars = 0;
    for (let next = history.next(); !next.done; next = history.next()) {
      chunk.push(next.value);
      chars += next.value.length;
      quads += countLines(next.value);
      if (chars >= HISTORY_CHARS_PER_TURN || quads >= start.historyMaxQuads) break;
    }
    if (chunk.length === 0) break;
    entries += chunk.length;
    worker.postMessage({ kind: 'history', entries: chunk } satisfies WorkerRequest);
  }
  return fed() ? { graphs: hotGraphs.length, entries, quads } : undefined;
}
