import { literal, namedNode, quad, type Quad } from '../../rdf/terms.js';
import { store as meta, xsd } from '../../rdf/vocab.js';
import { partBytes, partLines, startsComment, type CommitRecord, type CommitBytes } from '../commit-record.js';
import { entryOf } from '../../map-entry.js';

/** A graph a record finishes, with its final content as N-Triples. */
export interface FinishedGraph {
  graph: string;
  ntriples: string;
  /**
   * The record that finishes the graph also creates it (a new IRI): the archive cannot hold it yet, and the hot store
   * never held it.
   */
  created?: boolean;
  /**
   * The graph's triples as the commit that created it wrote them, in the order of its lines: read instead of its text.
   */
  triples?: readonly Quad[];
}

/**
 * The mark of a finished graph where it stays among the others (a SPARQL engine, an export):
 * start leaves a marked graph to the store, as the embedded store's archive does.
 */
export const finishedQuad = (graph: string): Quad =>
  quad(
    namedNode(graph),
    namedNode(meta.finishedGraph),
    literal('true', namedNode(xsd.boolean)),
    namedNode(meta.finishedGraphs),
  );

/*
 * Graphs a commit finishes (a ChangeRequest once decided: nothing writes to it again) leave the
 * hot store. The commit's journal record deletes what the hot store held of such a graph and
 * carries its whole final content as archive lines: N-Quads lines behind `#A `, which are comments
 * to Oxigraph (it loads records as they are) and the archive's to take. A record is thus still
 * one atomic change of the hot store, and the archive is derived from records alone.
 */
export const ARCHIVE_LINE = '#A ';
const ARCHIVE_LINE_BYTES = Buffer.from(`\n${ARCHIVE_LINE}`);

/** Archive lines for N-Quads lines (each ending in a newline). */
export const asArchiveLines = (lines: readonly string[]) => lines.map((line) => `${ARCHIVE_LINE}${line}`);

/** The graphs a record finishes, each with its final content as N-Triples. */
export function finishedGraphsIn(record: CommitRecord | CommitBytes): { graph: string; ntriples: string }[] {
  const insert = record.insert;
  const has =
    typeof insert === 'string'
      ? insert.startsWith(ARCHIVE_LINE) || insert.includes(`\n${ARCHIVE_LINE}`)
      : partBytes(insert).subarray(0, 3).toString() === ARCHIVE_LINE ||
        partBytes(insert).indexOf(ARCHIVE_LINE_BYTES) >= 0;
  if (!has) return [];
  const graphs = new Map<string, string[]>();
  for (const line of partLines(insert, startsComment)) {
    if (!line.startsWith(ARCHIVE_LINE)) continue;
    // The graph is the line's last term, an IRI (no space in it): `<s> <p> <o> <g> .`
    const at = line.lastIndexOf(' <');
    entryOf(graphs, line.slice(at + 2, -3), () => []).push(`${line.slice(ARCHIVE_LINE.length, at)} .\n`);
  }
  return [...graphs].map(([graph, lines]) => ({ graph, ntriples: lines.join('') }));
}
