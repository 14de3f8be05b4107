import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));

/**
 * The layers of docs/ARCHITECTURE.md, highest first: a module may import its own layer or one
 * below it, never one above. Where a path matches several prefixes, the longest wins.
 */
const LAYERS: Record<string, number> = {
  'main.ts': 5,
  'server.ts': 5,
  'server/': 5,
  'cli.ts': 5,
  'cli/': 5,
  'http/': 4,
  'observability/': 4,
  'domain/': 3,
  'store/': 2,
  'auth/': 2,
  'outbound/': 2,
  'shapes/': 2,
  'rdf/': 1,
  'config.ts': 0,
  'config/': 0,
  'errors.ts': 0,
  'bounded-cache.ts': 0,
  'map-entry.ts': 0,
  'budgeted-worker.ts': 0,
  'project-files.ts': 0,
};

/** The backends: only the composition root picks one, so only it (and the backend itself) imports one. */
const BACKENDS = ['store/embedded/', 'store/sparql-engine/'];
const backendOf = (file: string) => BACKENDS.find((b) => file.startsWith(b));

/**
 * The domain's folders, lowest first: a domain module may import its own folder or one earlier in
 * this list, never a later one, so the capabilities depend on each other one way (docs/ARCHITECTURE.md).
 * Folders that import none of each other (events and requests; moves, analytics and pubsub) are in
 * an arbitrary order among themselves.
 */
const DOMAIN_ORDER = [
  'domain/access/',
  'domain/objects/',
  'domain/api-errors.ts',
  'domain/events/',
  'domain/requests/',
  'domain/moves/',
  'domain/analytics/',
  'domain/pubsub/',
];

/** A domain module's place in DOMAIN_ORDER (undefined outside the domain). */
function domainRankOf(file: string): number | undefined {
  if (!file.startsWith('domain/')) return undefined;
  const rank = DOMAIN_ORDER.findIndex((p) => file === p || (p.endsWith('/') && file.startsWith(p)));
  if (rank < 0)
    throw new Error(`${file} is in no domain folder: add its folder to DOMAIN_ORDER and to docs/ARCHITECTURE.md`);
  return rank;
}

interface Edge {
  from: string;
  to: string;
}

/** Imports from a domain folder of a later one in DOMAIN_ORDER. */
const upwardInDomain = (edges: readonly Edge[]) =>
  edges
    .filter(({ from, to }) => {
      const [fromRank, toRank] = [domainRankOf(from), domainRankOf(to)];
      return fromRank !== undefined && toRank !== undefined && toRank > fromRank;
    })
    .map(({ from, to }) => `${from} -> ${to}`);

/** Imports by the store of `errors.ts`, where HttpError and its builders are: the store says why it fails, the HTTP layer picks the status. */
const httpErrorsInStore = (edges: readonly Edge[]) =>
  edges
    .filter(({ from, to }) => from.startsWith('store/') && to === 'errors.ts')
    .map(({ from, to }) => `${from} -> ${to}`);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [relative(SRC, path)] : [];
  });
}

/** Static imports and re-exports (type-only ones too) of the project's own modules, as paths under src/. */
function importsOf(file: string): string[] {
  const text = readFileSync(join(SRC, file), 'utf8');
  const specifiers = [
    ...text.matchAll(/^(?:import|export)\s[^;]*?\sfrom\s+'(\.{1,2}\/[^']+)'|\bimport\(\s*'(\.{1,2}\/[^']+)'\s*\)/gm),
  ].map((m) => m[1] ?? m[2]);
  return specifiers.map((spec) => normalize(join(dirname(file), spec)).replace(/\.js$/, '.ts'));
}

function layerOf(file: string): number {
  const prefix = Object.keys(LAYERS)
    .filter((p) => file === p || (p.endsWith('/') && file.startsWith(p)))
    .sort((a, b) => b.length - a.length)[0];
  if (prefix === undefined)
    throw new Error(`${file} is in no layer: add its folder to LAYERS and to docs/ARCHITECTURE.md`);
  return LAYERS[prefix];
}

/** Every cycle's modules (strongly connected components of more than one module, or a module importing itself). */
function cycles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

describe('source layout: imports follow the layers of docs/ARCHITECTURE.md', () => {
  const files = sourceFiles(SRC);
  const graph = new Map(files.map((file) => [file, importsOf(file)]));
  const edges = [...graph].flatMap(([from, targets]) => targets.map((to) => ({ from, to })));

  it('reads the whole tree (every import resolves to a module of src/)', () => {
    expect(files.length).to.be.greaterThan(100);
    expect(edges.length).to.be.greaterThan(300);
    expect(edges.filter(({ to }) => !graph.has(to))).to.deep.equal([]);
  });

  it('has no import cycle', () => {
    expect(cycles(graph)).to.deep.equal([]);
  });

  it('never imports a layer above', () => {
    const upward = edges
      .filter(({ from, to }) => layerOf(to) > layerOf(from))
      .map(({ from, to }) => `${from} -> ${to}`);
    expect(upward).to.deep.equal([]);
  });

  it('never imports a domain folder above its own (DOMAIN_ORDER)', () => {
    expect(upwardInDomain(edges)).to.deep.equal([]);
  });

  it('reaches a store backend only from the composition root and the backend itself', () => {
    const intoEngine = edges
      .filter(({ from, to }) => backendOf(to) !== undefined && backendOf(to) !== backendOf(from) && layerOf(from) !== 5)
      .map(({ from, to }) => `${from} -> ${to}`);
    expect(intoEngine).to.deep.equal([]);
  });

  it('keeps HTTP out of the store: no module of src/store imports HttpError or its builders (errors.ts)', () => {
    expect(httpErrorsInStore(edges)).to.deep.equal([]);
  });

  it('finds a cycle, an upward import, an engine import and an HTTP error in the store when there is one (the checks can fail)', () => {
    expect(httpErrorsInStore([{ from: 'store/sparql-query.ts', to: 'errors.ts' }])).to.have.length(1);
    expect(
      httpErrorsInStore([
        { from: 'domain/analytics/analytics.ts', to: 'errors.ts' },
        { from: 'store/embedded/journal/journal.ts', to: 'store/errors.ts' },
      ]),
    ).to.deep.equal([]);
    expect(
      cycles(
        new Map([
          ['a.ts', ['b.ts']],
          ['b.ts', ['a.ts']],
        ]),
      ),
    ).to.deep.equal([['a.ts', 'b.ts']]);
    expect(layerOf('store/graph-store.ts')).to.be.lessThan(layerOf('domain/objects/logistics-objects.ts'));
    expect(layerOf('store/embedded/durable-store.ts')).to.equal(layerOf('store/graph-store.ts'));
    // One backend importing the other counts as reaching into a backend; the seam is in none.
    expect(backendOf('store/sparql-engine/sparql-engine-store.ts')).to.not.equal(
      backendOf('store/embedded/durable-store.ts'),
    );
    expect(backendOf('store/graph-store.ts')).to.equal(undefined);
  });

  it('finds an import of a domain folder above its own when there is one (the check can fail)', () => {
    expect(
      upwardInDomain([
        { from: 'domain/access/authorizer.ts', to: 'domain/objects/revision-index.ts' },
        { from: 'domain/objects/logistics-objects.ts', to: 'domain/requests/grants.ts' },
      ]),
    ).to.deep.equal([
      'domain/access/authorizer.ts -> domain/objects/revision-index.ts',
      'domain/objects/logistics-objects.ts -> domain/requests/grants.ts',
    ]);
    expect(
      upwardInDomain([
        { from: 'domain/requests/grants.ts', to: 'domain/access/authorizer.ts' },
        { from: 'domain/requests/grants.ts', to: 'domain/requests/action-requests.ts' },
        { from: 'domain/objects/logistics-objects.ts', to: 'store/claims.ts' },
        { from: 'http/context.ts', to: 'domain/pubsub/outbox.ts' },
      ]),
    ).to.deep.equal([]);
    expect(() => domainRankOf('domain/new-capability/thing.ts')).to.throw(/DOMAIN_ORDER/);
  });
});
