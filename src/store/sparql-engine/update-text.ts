import { iriToNt, namedNode, quad, termToNt, tripleToNt, type Quad } from '../../rdf/terms.js';
import { toEngine } from './engine-literals.js';
import { latestGraph, revisionQuads } from '../schema/revisions.js';
import type { WriteTransaction } from '../transaction.js';
import { finishedQuad } from '../schema/finished-graphs.js';

/*
 * One write as one SPARQL 1.1 Update request: the engine applies the request as one transaction
 * (docs/sparql-engine.md says what Virtuoso guarantees). Graphs removed whole first, then the
 * deletions, then the insertions, so that a quad both deleted and inserted ends up present (as
 * the embedded store's journal record has it).
 */

/** The quads as the body of a DELETE DATA / INSERT DATA block: grouped by graph. */
function dataBlock(quads: readonly Quad[]): string {
  const byGraph = new Map<string, string[]>();
  for (const q of quads) {
    const graph = q.graph.termType === 'NamedNode' ? q.graph.value : '';
    let lines = byGraph.get(graph);
    if (!lines) byGraph.set(graph, (lines = []));
    lines.push(`${termToNt(q.subject)} ${termToNt(q.predicate)} ${termToNt(q.object.termType === 'Literal' ? toEngine(q.object) : q.object)} .`);
  }
  const parts: string[] = [];
  for (const [graph, lines] of byGraph) parts.push(graph === '' ? lines.join('\n') : `GRAPH ${iriToNt(graph)} {\n${lines.join('\n')}\n}`);
  return parts.join('\n');
}

/**
 * What each new revision writes: its metadata (every revision's is kept), its triples in its own
 * graph, and the object's graph (`latestGraph`, as in the embedded store) changed in place.
 */
function revisionWrites(tx: WriteTransaction): { insert: Quad[]; delete: Quad[] } {
  const insert: Quad[] = [];
  const remove: Quad[] = [];
  for (const { revision, triples, replaces } of tx.revisions) {
    insert.push(...revisionQuads(revision), ...inGraph(triples, revision.graph));
    const latest = latestGraph(revision.object);
    if (!replaces) {
      insert.push(...inGraph(triples, latest));
      continue;
    }
    const { added, removed } = replaces.added && replaces.removed ? { added: replaces.added, removed: replaces.removed } : difference(replaces.triples, triples);
    insert.push(...inGraph(added, latest));
    remove.push(...inGraph(removed, latest));
  }
  return { insert, delete: remove };
}

function inGraph(triples: readonly Quad[], graph: string): Quad[] {
  const g = namedNode(graph);
  return triples.map((t) => quad(t.subject, t.predicate, t.object, g));
}

/** How `next` differs from `previous`, compared as N-Triples. */
function difference(previous: readonly Quad[], next: readonly Quad[]): { added: Quad[]; removed: Quad[] } {
  const before = new Set(previous.map(tripleToNt));
  const after = new Set(next.map(tripleToNt));
  return { added: next.filter((t) => !before.has(tripleToNt(t))), removed: previous.filter((t) => !after.has(tripleToNt(t))) };
}

/** The SPARQL Update of `tx`; empty when it writes nothing. */
export function updateText(tx: WriteTransaction): string {
  const operations: string[] = [];
  for (const graph of tx.removedGraphs) operations.push(`DROP SILENT GRAPH ${iriToNt(graph)}`);
  const revisions = revisionWrites(tx);
  const remove = [...tx.delete, ...revisions.delete];
  if (remove.length > 0) operations.push(`DELETE DATA {\n${dataBlock(remove)}\n}`);
  const insert = [...tx.insert, ...revisions.insert, ...tx.finished.map(finishedQuad)];
  if (insert.length > 0) operations.push(`INSERT DATA {\n${dataBlock(insert)}\n}`);
  return operations.join(' ;\n');
}
