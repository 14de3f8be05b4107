import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { once } from 'node:events';
import { toEngineNQuads } from '../../src/store/sparql-engine/engine-literals.js';
import { runIsql } from './isql.js';

/** Lines of the load file between two checks of the write stream's buffer. */
const LINES_PER_WRITE = 10_000;

/**
 * Loads an N-Quads file (`onerecord export` of an embedded data directory) into a Virtuoso with its
 * own bulk loader: the file is first copied into the instance's data directory (the only place
 * its loader may read, `DirsAllowed`) with its literals as the server writes them to the engine
 * (engine-literals.ts), then `ld_dir` + `rdf_loader_run` + `checkpoint`. Rejects with the loader's
 * error when it refused the file.
 */
export async function bulkLoad(engine: { dir: string; sqlPort: number }, file: string): Promise<{ quads: number; seconds: number }> {
  const started = performance.now();
  const loadDir = join(engine.dir, 'bulk-load');
  await mkdir(loadDir, { recursive: true });
  const target = join(loadDir, 'export.nq');
  const quads = await copyForEngine(resolve(file), target);
  try {
    await runIsql(engine.sqlPort, `DELETE FROM DB.DBA.LOAD_LIST WHERE ll_file LIKE '${loadDir}/%';
ld_dir ('${loadDir}', 'export.nq', 'urn:onerecord:store:bulk-load');
rdf_loader_run ();
checkpoint;
`);
    const report = await runIsql(engine.sqlPort, `SELECT ll_state, ll_error FROM DB.DBA.LOAD_LIST WHERE ll_file LIKE '${loadDir}/%';\n`);
    const error = report.split('\n').find((line) => /^\s*\d+\s+\S/.test(line) && !/^\s*2\s+NULL\s*$/.test(line));
    if (error !== undefined) throw new Error(`Virtuoso's bulk loader refused ${file}: ${error.trim()}`);
  } finally {
    await rm(loadDir, { recursive: true, force: true });
  }
  return { quads, seconds: (performance.now() - started) / 1000 };
}

async function copyForEngine(from: string, to: string): Promise<number> {
  const out = createWriteStream(to);
  let lines = 0;
  let batch: string[] = [];
  const flush = async () => {
    if (!out.write(toEngineNQuads(batch.join('')))) await once(out, 'drain');
    batch = [];
  };
  for await (const line of createInterface({ input: createReadStream(from), crlfDelay: Infinity })) {
    if (line === '' || line.startsWith('#')) continue;
    batch.push(`${line}\n`);
    lines += 1;
    if (batch.length >= LINES_PER_WRITE) await flush();
  }
  await flush();
  out.end();
  await once(out, 'finish');
  return lines;
}
