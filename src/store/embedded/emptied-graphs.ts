import { partBytes, partLines, startsComment, type CommitBytes, type CommitRecord } from '../commit-record.js';
import { iriToNt } from '../../rdf/terms.js';

/*
 * Deleting a graph's last quad leaves its name in Oxigraph's list of graphs for good, one per delivered
 * notification. A record that empties graphs (WriteTransaction.removedGraphs, emptiedGraphs) names them after
 * all its other lines, behind `#E `: comments to Oxigraph, read back wherever the record is applied (at once
 * and at replay) to drop those names.
 */
const EMPTIED_LINE = '#E ';

/** The lines naming `graphs` as emptied, to end a record's insertions with. */
export const emptiedGraphLines = (graphs: readonly string[]) =>
  graphs.map((graph) => `${EMPTIED_LINE}${iriToNt(graph)}\n`).join('');

/** The graphs a record empties. */
export function emptiedGraphsIn(record: CommitRecord | CommitBytes): string[] {
  const insert = record.insert;
  // Its lines come last: a record without them is told by its last line alone.
  const text = typeof insert === 'string' ? insert : partBytes(insert);
  const last = text.lastIndexOf('\n', text.length - 2) + 1;
  const marked =
    typeof text === 'string'
      ? text.startsWith(EMPTIED_LINE, last)
      : text.toString('latin1', last, last + EMPTIED_LINE.length) === EMPTIED_LINE;
  if (!marked) return [];
  return partLines(insert, startsComment)
    .filter((line) => line.startsWith(EMPTIED_LINE))
    .map((line) => line.slice(EMPTIED_LINE.length + 1, -1));
}
