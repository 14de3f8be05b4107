import { asArchiveLines } from '../schema/finished-graphs.js';
import { store as bookkeeping } from '../../rdf/vocab.js';
import type { CommitRecord } from '../commit-record.js';
import type { ArchiveParts, FinishedGraph } from './archive/archive.js';
import { latestGraph, revisionQuads, type WrittenRevision } from '../schema/revisions.js';
import type { RevisionWrite, WriteTransaction } from '../transaction.js';
import { iriToNt, quad, quadToNq, tripleToNt, triplesInGraphToNq, type Quad, type RDF } from '../../rdf/terms.js';
import { revisionDelta } from '../revision-delta.js';
import { entryOf } from '../../map-entry.js';
import { emptiedGraphLines } from './emptied-graphs.js';

/** A journal record as `recordFor` builds it: the quads it inserts and deletes, and what the archive takes from it. */
export interface BuiltRecord extends CommitRecord {
  inserted: number;
  deleted: number;
  /**
   * The archive's parts of the record, the values it would read back from it; undefined where it must (see
   * archiveParts).
   */
  archive?: ArchiveParts;
}

/**
 * The journal record for a change. A quad both deleted and inserted ends present (as in SPARQL DELETE/INSERT), so
 * it is left out of the deletions: the record's sets stay disjoint. A revision is its metadata plus its graph's
 * difference from the one it replaces (all of it, `canonical`, for revision 1), so record, hot store and archive
 * hold the same lines (docs/storage.md, "The revision archive"). `hotGraph`: a graph held hot, as N-Triples.
 */
export function recordFor(
  change: WriteTransaction,
  canonical: (literals: RDF.Literal[]) => RDF.Literal[],
  hotGraph: (graph: string) => string = () => '',
): BuiltRecord {
  // A finished graph leaves the hot store: what this commit adds to it never goes there (told by the quad's graph, not
  // its line).
  const finished = new Set(change.finished);
  const insert: string[] = [];
  const archived: string[] = [];
  // The finished graphs' final content as N-Triples lines, in the order of their archive lines, and
  // the quads of those this commit creates (all of their lines): what the archive takes.
  const finishedLines = new Map<string, string[]>();
  const createdQuads = new Map<string, Quad[]>();
  const archive = (graph: string, ntriples: string, line: string) => {
    archived.push(line);
    entryOf(finishedLines, graph, () => []).push(ntriples);
  };
  for (const q of change.insert) {
    const graph = q.graph.value;
    if (finished.size > 0 && finished.has(graph)) {
      const ntriples = tripleToNt(q);
      archive(graph, ntriples, inGraph(ntriples, iriToNt(graph)));
      if (change.created.has(graph)) entryOf(createdQuads, graph, () => []).push(q);
    } else insert.push(quadToNq(q));
  }
  const deletions = change.delete.map(quadToNq);
  const objectLines = change.revisions.map((w) => revisionLines(w, canonical, insert, deletions));
  for (const graph of change.finished) {
    // What the hot store held of it is deleted; a graph this commit creates has nothing there (a ChangeRequest decided
    // as it is made).
    if (change.created.has(graph)) continue;
    const graphNt = iriToNt(graph);
    for (const ntriples of ntriplesLines(hotGraph(graph))) {
      const line = inGraph(ntriples, graphNt);
      deletions.push(line);
      archive(graph, ntriples, line);
    }
  }
  for (const graph of change.removedGraphs)
    deletions.push(...ntriplesLines(hotGraph(graph)).map((line) => inGraph(line, iriToNt(graph))));
  const emptied = emptiedGraphLines([...change.removedGraphs, ...change.emptiedGraphs]);
  const insertText = insert.join('') + asArchiveLines(archived).join('') + emptied;
  const inserted = deletions.length === 0 ? undefined : new Set(insert);
  const deleted = inserted ? deletions.filter((line) => !inserted.has(line)) : [];
  const finishedParts = [...finishedLines].map(([graph, lines]): FinishedGraph => {
    const triples = createdQuads.get(graph);
    return { graph, ntriples: lines.join(''), ...(triples && { created: true, triples }) };
  });
  return {
    delete: deleted.join(''),
    insert: insertText,
    inserted: insert.length,
    deleted: deleted.length,
    archive: archiveParts(change, objectLines, inserted, finishedParts),
  };
}

/** The N-Quads line of an N-Triples line (ending in ` .\n`) in the graph written `graphNt`. */
const inGraph = (ntriples: string, graphNt: string) => `${ntriples.slice(0, -2)}${graphNt} .\n`;

/** The lines of N-Triples text, each with its newline. */
const ntriplesLines = (text: string) => text.split(/(?<=\n)/).filter(Boolean);

/**
 * The archive's parts of a record as `revisionWritesIn` reads them back: each revision's metadata and its graph's
 * inserted and deleted lines. Undefined when another part of the transaction writes to those graphs too (reading
 * the record would take those lines as well): the archive then reads the record. The domain's writes never do.
 */
function archiveParts(
  change: WriteTransaction,
  objectLines: readonly ObjectLines[],
  inserted: ReadonlySet<string> | undefined,
  finished: FinishedGraph[],
): ArchiveParts | undefined {
  if (change.revisions.length > 0) {
    const revisionGraphs = new Set<string>([bookkeeping.metaGraph]);
    for (const w of change.revisions) revisionGraphs.add(latestGraph(w.revision.object)).add(w.revision.graph);
    if (revisionGraphs.size !== 1 + 2 * change.revisions.length) return undefined;
    const elsewhere = (q: Quad) => q.graph.termType === 'DefaultGraph' || revisionGraphs.has(q.graph.value);
    if (
      change.insert.some(elsewhere) ||
      change.delete.some(elsewhere) ||
      [...change.finished, ...change.removedGraphs].some((g) => revisionGraphs.has(g))
    )
      return undefined;
  }
  const revisions = change.revisions.map((w, i): WrittenRevision => {
    const { ins, del } = objectLines[i];
    const tail = ` ${iriToNt(latestGraph(w.revision.object))} .\n`;
    const asNTriples = (lines: readonly string[]) =>
      lines.map((line) => `${line.slice(0, line.length - tail.length)} .\n`).join('');
    return {
      record: w.revision,
      whole: false,
      ins: asNTriples(ins),
      del: asNTriples(inserted ? del.filter((line) => !inserted.has(line)) : []),
    };
  });
  return { revisions, finished };
}

/**
 * The lines a revision writes into its object's graph (N-Quads), inserted and deleted, before the record drops the
 * deletions it also inserts.
 */
interface ObjectLines {
  ins: readonly string[];
  del: readonly string[];
}

/** Adds a revision's lines to a record's insertions and deletions; returns those of its object's graph. */
function revisionLines(
  w: RevisionWrite,
  canonical: (literals: RDF.Literal[]) => RDF.Literal[],
  insert: string[],
  deletions: string[],
): ObjectLines {
  insert.push(...revisionQuads(w.revision).map(quadToNq));
  const graph = latestGraph(w.revision.object);
  const lines = objectGraphLines(w, canonical, graph);
  insert.push(...lines.ins);
  // The hot store keeps the metadata of revision 1 (who created the object) and of the latest.
  if (w.replaces && w.replaces.revision.number > 1) deletions.push(...revisionQuads(w.replaces.revision).map(quadToNq));
  deletions.push(...lines.del);
  return lines;
}

function objectGraphLines(
  w: RevisionWrite,
  canonical: (literals: RDF.Literal[]) => RDF.Literal[],
  graph: string,
): ObjectLines {
  if (!w.replaces) return { ins: triplesInGraphToNq(canonicalTriples(w.triples, canonical), graph), del: [] };
  const { added, removed } = revisionDelta(w.replaces, w.triples);
  return { ins: triplesInGraphToNq(added, graph), del: triplesInGraphToNq(removed, graph) };
}

function canonicalTriples(
  triples: readonly Quad[],
  canonical: (literals: RDF.Literal[]) => RDF.Literal[],
): readonly Quad[] {
  const at = triples.flatMap((t, i) => (t.object.termType === 'Literal' ? [i] : []));
  if (at.length === 0) return triples;
  const literals = canonical(at.map((i) => triples[i].object as RDF.Literal));
  const out = [...triples];
  at.forEach((i, k) => {
    if (literals[k] !== triples[i].object)
      out[i] = quad(triples[i].subject, triples[i].predicate, literals[k], triples[i].graph);
  });
  return out;
}
