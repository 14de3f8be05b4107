import { once } from 'node:events';
import { open } from 'node:fs/promises';
import { foldDataDirectory, type Folded } from './fold.js';
import { latestSnapshot } from './snapshot.js';

/**
 * Writes everything a data directory holds (its newest snapshot and the journal after it) as
 * N-Quads to `outFile`, or to stdout, streaming: it works on a directory too large to load.
 */
export async function exportDataDirectory(dataDir: string, outFile?: string): Promise<Folded> {
  const snapshot = await latestSnapshot(dataDir);
  const range = { snapshot, from: snapshot ?? 1 };
  if (outFile === undefined) {
    return foldDataDirectory(
      dataDir,
      range,
      async (data) => {
        if (!process.stdout.write(data)) await once(process.stdout, 'drain');
      },
      'drop',
    );
  }
  const file = await open(outFile, 'wx');
  try {
    const folded = await foldDataDirectory(dataDir, range, async (data) => void (await file.write(data)), 'drop');
    await file.sync();
    return folded;
  } finally {
    await file.close();
  }
}
