import { ntriplesInGraph } from '../../../rdf/ntriples.js';
import { Parser } from 'n3';
import { iriToNt, quadToNq, tripleToNt } from '../../../rdf/terms.js';
import { store as meta } from '../../../rdf/vocab.js';
import type { CommitRecord } from '../../commit-record.js';
import type { OxigraphIndex } from '../oxigraph/oxigraph-index.js';
import type { RevisionArchive } from './revision-archive.js';
import { latestGraph, readRevisions, revisionQuads, type RevisionRecord } from '../../schema/revisions.js';
import { entryOf } from '../../../map-entry.js';

/** A graph's N-Triples as our serialiser writes them (the archive compares lines, so they must be written one way). */
function ourLines(ntriples: string): string {
  return new Parser({ format: 'application/n-triples' }).parse(ntriples).map(tripleToNt).join('');
}

/**
 * Moves data from the layout before the revision archive (every revision a hot graph of its own) to today's, once:
 * revision graphs into the archive, then per object a journal record keeping revisions 1 and the latest hot. The
 * caller journals the records after the archive is on disk, so the journal stays the one source of the hot store
 * (docs/storage.md, "Durability"). Returns the records and how many revisions were archived.
 */
export function migrateRevisionGraphs(
  index: OxigraphIndex,
  archive: RevisionArchive,
): { moved: number; records: MigrationRecord[] } {
  const p = iriToNt;
  const old = index.select(
    `SELECT ?g WHERE { GRAPH ${p(meta.metaGraph)} { ?g ${p(meta.revisionOf)} ?o } GRAPH ?g { ?s ?p ?x } } LIMIT 1`,
  );
  if (old.results.bindings.length === 0) return { moved: 0, records: [] };
  const graphs = new Set(index.listGraphs());
  const byObject = new Map<string, RevisionRecord[]>();
  for (const r of readRevisions(index)) entryOf(byObject, r.object, () => []).push(r);
  let moved = 0;
  const records: MigrationRecord[] = [];
  for (const [object, revisions] of byObject) {
    const kept = revisions.filter((r) => graphs.has(r.graph));
    if (kept.length === 0) continue;
    const latest = revisions[revisions.length - 1];
    let latestLines = '';
    const deletions: string[] = [];
    for (const r of kept) {
      const text = index.graphNTriples(r.graph);
      const lines = ourLines(text);
      archive.archiveWhole(r, lines);
      if (r === latest) latestLines = lines;
      deletions.push(ntriplesInGraph(text, r.graph));
      moved += 1;
    }
    deletions.push(
      ...revisions.filter((r) => r.number !== 1 && r !== latest).flatMap((r) => revisionQuads(r).map(quadToNq)),
    );
    const insert = ntriplesInGraph(latestLines, latestGraph(object));
    records.push({ delete: deletions.join(''), insert, emptied: kept.map((r) => r.graph) });
  }
  return { moved, records };
}

/**
 * A journal record of the move, and the graphs it empties (their names are dropped from Oxigraph once it is applied).
 */
export interface MigrationRecord extends CommitRecord {
  emptied: string[];
}
