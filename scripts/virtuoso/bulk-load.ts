import { createReadStream, createWriteStream, type WriteStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { once } from 'node:events';
import { toEngineNQuads } from '../../src/store/sparql-engine/engine-literals.js';
import { runIsql } from './isql.js';

/** Lines of the load file between two checks of the write stream's buffer. */
const LINES_PER_WRITE = 10_000;

/**
 * Quads per file handed to the loader (about 200 MB). One file of 107 million quads (1,000,000
 * objects) failed after 9 minutes with "Transaction deadlock"; the loader commits as it goes, so a
 * file that fails is loaded again (quads already in are kept once) after the others.
 */
const QUADS_PER_FILE = 1_000_000;

/** Times the files that failed are loaded again. */
const RELOADS = 3;

/**
 * Loads an N-Quads file (`onerecord export` of an embedded data directory) into a Virtuoso with its
 * own bulk loader: the file is first copied into the instance's data directory (the only place
 * its loader may read, `DirsAllowed`) as files of QUADS_PER_FILE quads with its literals as the
 * server writes them to the engine (engine-literals.ts), then `ld_dir` + `rdf_loader_run` +
 * `checkpoint`. Rejects with the loader's error when it still refuses a file after RELOADS tries.
 */
export async function bulkLoad(
  engine: { dir: string; sqlPort: number },
  file: string,
): Promise<{ quads: number; seconds: number }> {
  const started = performance.now();
  const loadDir = join(engine.dir, 'bulk-load');
  await mkdir(loadDir, { recursive: true });
  const quads = await copyForEngine(resolve(file), loadDir);
  try {
    await runIsql(
      engine.sqlPort,
      `DELETE FROM DB.DBA.LOAD_LIST WHERE ll_file LIKE '${loadDir}/%';
ld_dir ('${loadDir}', 'export-*.nq', 'urn:onerecord:store:bulk-load');
`,
    );
    for (let reloads = 0; ; reloads++) {
      await runIsql(engine.sqlPort, 'rdf_loader_run ();\ncheckpoint;\n');
      const report = await runIsql(
        engine.sqlPort,
        `SELECT ll_state, ll_error FROM DB.DBA.LOAD_LIST WHERE ll_file LIKE '${loadDir}/%';\n`,
      );
      const error = report.split('\n').find((line) => /^\s*\d+\s+\S/.test(line) && !/^\s*2\s+NULL\s*$/.test(line));
      if (error === undefined) break;
      if (reloads === RELOADS) throw new Error(`Virtuoso's bulk loader refused ${file}: ${error.trim()}`);
      await runIsql(
        engine.sqlPort,
        `UPDATE DB.DBA.LOAD_LIST SET ll_state = 0, ll_error = NULL WHERE ll_file LIKE '${loadDir}/%' AND ll_error IS NOT NULL;\n`,
      );
    }
  } finally {
    await rm(loadDir, { recursive: true, force: true });
  }
  return { quads, seconds: (performance.now() - started) / 1000 };
}

/** Copies `from` into `dir` as files of QUADS_PER_FILE quads, literals as the engine keeps them; answers the quads copied. */
async function copyForEngine(from: string, dir: string): Promise<number> {
  let out: WriteStream | undefined;
  let lines = 0;
  let batch: string[] = [];
  const flush = async () => {
    if (batch.length === 0) return;
    if (!out!.write(toEngineNQuads(batch.join('')))) await once(out!, 'drain');
    batch = [];
  };
  const close = async () => {
    await flush();
    out?.end();
    if (out) await once(out, 'finish');
  };
  for await (const line of createInterface({ input: createReadStream(from), crlfDelay: Infinity })) {
    if (line === '' || line.startsWith('#')) continue;
    if (lines % QUADS_PER_FILE === 0) {
      await close();
      out = createWriteStream(join(dir, `export-${String(lines / QUADS_PER_FILE).padStart(5, '0')}.nq`));
    }
    batch.push(`${line}\n`);
    lines += 1;
    if (batch.length >= LINES_PER_WRITE) await flush();
  }
  await close();
  return lines;
}
