import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULTS } from '../../src/config.js';
import { DurableStore, type DurableStoreOptions } from '../../src/store/embedded/durable-store.js';
import type { OxigraphIndex } from '../../src/store/embedded/oxigraph/oxigraph-index.js';
import { literal, namedNode, quad, type Quad } from '../../src/rdf/terms.js';

export const EX = 'https://store.example.com/';

/** A fresh data directory, removed by the returned function. */
export async function tempDir(): Promise<{ dir: string; remove: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'onerecord-store-'));
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

/** `count` quads in graph `g`, with literals that need escaping and characters outside the BMP. */
export function graphQuads(g: string, count: number, salt = ''): Quad[] {
  const graph = namedNode(`${EX}${g}`);
  return Array.from({ length: count }, (_, i) =>
    quad(
      namedNode(`${EX}${g}/s${i % 3}`),
      namedNode(`${EX}p${i}`),
      literal(`value ${salt}${i} "quoted" \\ line\nbreak é 🚚`),
      graph,
    ),
  );
}

export interface OpenedStore {
  store: DurableStore;
  log: string[];
}

/** Opens a store on `dir`, collecting its log lines. */
export async function openStore(dir: string, options: Partial<DurableStoreOptions> = {}): Promise<OpenedStore> {
  const log: string[] = [];
  const store = await DurableStore.open({
    dataDir: dir,
    ...DEFAULTS.journal,
    ...DEFAULTS.store,
    log: (m) => log.push(m),
    ...options,
  });
  return { store, log };
}

/** Every quad of the index as sorted N-Quads lines: two stores are equal when these are. */
export function allQuads(index: OxigraphIndex): string[] {
  const lines = index.defaultGraphNTriples().split('\n').filter(Boolean);
  for (const g of index.listGraphs()) {
    for (const line of index.graphNTriples(g).split('\n')) if (line) lines.push(`${line.slice(0, -2)} <${g}> .`);
  }
  return lines.sort();
}
