import { partBytes, type CommitBytes } from '../commit-record.js';
import { iriToNt } from '../../rdf/terms.js';
import type { Archive, ArchiveParts } from './archive/archive.js';
import type { OxigraphIndex } from './oxigraph/oxigraph-index.js';
import { emptiedGraphsIn } from './emptied-graphs.js';

/**
 * Hands a record applied to the hot store to the archive (with its parts when its commit has
 * them); drops the names of the graphs it finished or emptied. Returns the revisions new to the archive.
 */
export function takeToArchive(
  index: OxigraphIndex,
  archive: Archive,
  record: CommitBytes,
  parts?: ArchiveParts,
): number {
  const { revisions, finished } = archive.applyRecord(record, parts);
  // Deleting a graph's last quad leaves its name in Oxigraph's list of graphs (a graph the record creates was never
  // there).
  const deleted = partBytes(record.delete);
  index.dropGraphs(
    finished.filter((f) => !f.created && deleted.includes(` ${iriToNt(f.graph)} .\n`)).map((f) => f.graph),
  );
  // At replay a later record of the same batch may have written to an emptied graph again: only empty ones go.
  index.dropEmptyGraphs(emptiedGraphsIn(record));
  return revisions;
}
