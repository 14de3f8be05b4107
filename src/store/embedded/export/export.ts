import { ntriplesInGraph } from '../../../rdf/ntriples.js';
import { once } from 'node:events';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { foldDataDirectory, type Folded } from './fold.js';
import { readJournal } from '../journal/journal.js';
import { Archive, ARCHIVE_DIR } from '../archive/archive.js';
import { latestSnapshot } from '../snapshot/snapshot.js';
import { finishedQuad } from '../../schema/finished-graphs.js';
import { quadToNq } from '../../../rdf/terms.js';

/**
 * Writes everything a data directory holds as N-Quads, streaming, so it works on a directory too large to load:
 * the hot store (snapshot and journal), every revision from the archive with its metadata, the Logistics Events with
 * theirs, and the received notifications with their receipts; the archive is first completed from the journal, as a
 * start would (docs/cli.md).
 */
export async function exportDataDirectory(dataDir: string, outFile?: string): Promise<Folded> {
  if (outFile === undefined) {
    return exportTo(dataDir, async (data) => {
      if (!process.stdout.write(data)) await once(process.stdout, 'drain');
    });
  }
  const file = await open(outFile, 'wx');
  try {
    const folded = await exportTo(dataDir, async (data) => void (await file.write(data)));
    await file.sync();
    return folded;
  } finally {
    await file.close();
  }
}

async function exportTo(dataDir: string, write: (data: Buffer) => Promise<void>): Promise<Folded> {
  const snapshot = await latestSnapshot(dataDir);
  const range = { snapshot, from: snapshot ?? 1 };
  const folded = await foldDataDirectory(dataDir, range, write, 'drop');
  const archive = Archive.open(join(dataDir, ARCHIVE_DIR));
  try {
    await archive.splitLegacyRequests();
    await readJournal(dataDir, range, (records) => {
      for (const record of records) archive.applyRecord(record);
    });
    let lines = await archive.revisions.exportRevisions((text) => write(Buffer.from(text)));
    // Finished graphs (action requests with a final status, received notifications), each with the mark that
    // tells a SPARQL engine backend to leave it in the engine at start (docs/sparql-engine.md).
    const requests = function* () {
      for (const graph of archive.requests.graphs())
        yield { graph, nquads: ntriplesInGraph(archive.requests.ntriples(graph), graph) };
    };
    for (const { graph, nquads } of [...requests(), ...archive.notifications.nquads()]) {
      const text = `${nquads}${quadToNq(finishedQuad(graph))}`;
      await write(Buffer.from(text));
      lines += countLines(text);
    }
    // Events with their metadata, unmarked: a SPARQL engine keeps them among its graphs.
    for (const text of archive.events.nquads()) {
      await write(Buffer.from(text));
      lines += countLines(text);
    }
    return { ...folded, lines: folded.lines + lines };
  } finally {
    await archive.flushed();
    await archive.close();
  }
}

const countLines = (text: string) => {
  let n = 0;
  for (let at = text.indexOf('\n'); at >= 0; at = text.indexOf('\n', at + 1)) n++;
  return n;
};
