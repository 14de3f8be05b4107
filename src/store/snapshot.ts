import { createReadStream } from 'node:fs';
import { open, readdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { OxigraphIndex } from './oxigraph-index.js';
import { iriToNt } from '../rdf/terms.js';

const SNAPSHOT_PATTERN = /^snapshot-(\d{8})\.nq$/;
const END_MARKER = '# end of snapshot\n';
const GRAPHS_PER_WRITE = 200;
const LOAD_CHUNK_BYTES = 4 * 1024 * 1024;

export const snapshotName = (segment: number) => `snapshot-${String(segment).padStart(8, '0')}.nq`;

/**
 * The newest complete snapshot: it holds everything written before journal segment `segment`,
 * so startup loads it and replays segments from `segment` on.
 */
export async function latestSnapshot(dir: string): Promise<number | undefined> {
  const numbers = (await readdir(dir))
    .map((n) => SNAPSHOT_PATTERN.exec(n))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => Number(m[1]))
    .sort((a, b) => b - a);
  return numbers[0];
}

/** Streams a snapshot into the store in chunks cut at line ends: never one giant string. */
export async function loadSnapshot(index: OxigraphIndex, dir: string, segment: number): Promise<void> {
  const path = join(dir, snapshotName(segment));
  let carry = '';
  let sawEnd = false;
  for await (const chunk of createReadStream(path, { encoding: 'utf8', highWaterMark: LOAD_CHUNK_BYTES })) {
    const text = carry + (chunk as string);
    const cut = text.lastIndexOf('\n') + 1;
    carry = text.slice(cut);
    if (cut > 0) {
      const body = text.slice(0, cut);
      if (body.endsWith(END_MARKER)) sawEnd = true;
      index.loadTrusted(body);
    }
  }
  if (!sawEnd || carry.length > 0) throw new Error(`snapshot ${snapshotName(segment)} is incomplete; refusing to start`);
}

/**
 * Writes every graph of the store to `snapshot-<segment>.nq`: temp file, fsync, rename, fsync dir.
 * It runs while writes go on: graphs are read a few hundred at a time between awaits, so the
 * file may hold some effects of records in segment >= `segment`. Replaying those records again
 * is harmless because every record only inserts or deletes given quads.
 */
export async function writeSnapshot(index: OxigraphIndex, dir: string, segment: number): Promise<void> {
  const finalPath = join(dir, snapshotName(segment));
  const tempPath = `${finalPath}.tmp`;
  const file = await open(tempPath, 'w');
  try {
    const graphs = index.listGraphs();
    for (let i = 0; i < graphs.length; i += GRAPHS_PER_WRITE) {
      let text = '';
      for (const graph of graphs.slice(i, i + GRAPHS_PER_WRITE)) {
        // N-Triples lines end in " .\n" and literals never hold a raw newline, so this adds the graph to each line.
        text += index.graphNTriples(graph).replaceAll(' .\n', ` ${iriToNt(graph)} .\n`);
      }
      await file.write(text);
    }
    await file.write(END_MARKER);
    await file.sync();
  } finally {
    await file.close();
  }
  await rename(tempPath, finalPath);
  const dirHandle = await open(dir, 'r');
  try {
    await dirHandle.sync();
  } finally {
    await dirHandle.close();
  }
}

export async function removeSnapshotsBefore(dir: string, segment: number): Promise<void> {
  for (const name of await readdir(dir)) {
    const m = SNAPSHOT_PATTERN.exec(name);
    if ((m && Number(m[1]) < segment) || name.endsWith('.nq.tmp')) await rm(join(dir, name));
  }
}
