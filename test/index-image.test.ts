import { expect } from 'chai';
import { copyFile, open, readdir, readFile, truncate, writeFile, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { IMAGE_FILE } from '../src/store/embedded/image/index-image.js';
import { revisionGraph, type RevisionRecord } from '../src/store/schema/revisions.js';
import { literal, namedNode, quad } from '../src/rdf/terms.js';
import { CARGO, rdf } from '../src/rdf/vocab.js';
import { allQuads, EX, graphQuads, openStore as openStoreWithDefaults, tempDir } from './support/store-data.js';
import type { DurableStore, DurableStoreOptions } from '../src/store/embedded/durable-store.js';

/**
 * The stores here are far below the default store.memoryImageMinQuads: they write images at any
 * size; and keep a smaller reserve free, as an image reads and writes the whole memory.
 */
const openStore = (dir: string, options: Partial<DurableStoreOptions> = {}) =>
  openStoreWithDefaults(dir, { memoryImageMinQuads: 0, memoryReserveBytes: 16 * 2 ** 20, ...options });

/** Queries whose answers must not change across a restart (joins, aggregates, filters, ordering). */
const QUERIES = [
  'SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }',
  'SELECT ?g (COUNT(DISTINCT ?s) AS ?subjects) WHERE { GRAPH ?g { ?s ?p ?o } } GROUP BY ?g ORDER BY ?g',
  'SELECT ?s ?o WHERE { GRAPH ?g { ?s ?p ?o FILTER(CONTAINS(STR(?o), "value 1")) } } ORDER BY ?s ?o LIMIT 50',
];

/**
 * Everything a store answers: every quad, each graph as N-Triples (a graph named by a JS term), and
 * the queries; in an order of their own (Oxigraph's order follows what was loaded first).
 */
async function contents(store: DurableStore): Promise<string> {
  const graphs = store.index.listGraphs().sort();
  const answers: string[][] = [];
  for (const q of QUERIES) answers.push((await store.select(q)).results.bindings.map((b) => JSON.stringify(b)).sort());
  return JSON.stringify({
    quads: allQuads(store.index),
    graphs: graphs.map((g) => store.index.graphNTriples(g).split('\n').sort()),
    answers,
  });
}

/**
 * The domain events start publishes (publishStored): what the server's indexes are rebuilt from,
 * the revisions among them (which an image carries rather than the start reading them back).
 */
async function storedEvents(store: DurableStore): Promise<string[]> {
  const events: string[] = [];
  store.committed.subscribe((published) => events.push(...published.map((e) => JSON.stringify(e))));
  await store.publishStored();
  return events.sort();
}

const objectIri = (i: number) => `${EX}logistics-objects/o${i}`;
const revisionOf = (i: number, n: number): RevisionRecord => ({
  object: objectIri(i),
  number: n,
  graph: revisionGraph(objectIri(i), n),
  createdAt: new Date(1_700_000_000_000 + i * 100 + n),
  createdBy: `${EX}holder`,
  mostSpecificType: `${CARGO}Piece`,
});
const objectAt = (i: number, n: number) => [
  quad(namedNode(objectIri(i)), namedNode(rdf.type), namedNode(`${CARGO}Piece`)),
  quad(namedNode(objectIri(i)), namedNode(`${CARGO}remarks`), literal(`remark of revision ${n} é`)),
];

/** Objects `from` to `to` (exclusive) created, every other one changed once, as the domain writes revisions. */
async function writeObjects(store: DurableStore, from: number, to: number): Promise<void> {
  for (let i = from; i < to; i++) {
    const tx = store.begin();
    tx.revisions.push({ revision: revisionOf(i, 1), triples: objectAt(i, 1) });
    await store.commit(tx);
  }
  for (let i = from; i < to; i += 2) {
    const tx = store.begin();
    tx.revisions.push({
      revision: revisionOf(i, 2),
      triples: objectAt(i, 2),
      replaces: { revision: revisionOf(i, 1), triples: objectAt(i, 1) },
    });
    await store.commit(tx);
  }
}

/** A store with data in its snapshot and in the journal after it: objects with revisions, deletions and dropped graphs included. */
async function writeData(store: DurableStore): Promise<void> {
  await writeObjects(store, 0, 20);
  for (let g = 0; g < 30; g++) await store.commit(store.begin({ insert: graphQuads(`g${g}`, 40) }));
  await store.snapshot();
  await writeObjects(store, 20, 30);
  for (let g = 0; g < 10; g++)
    await store.commit(store.begin({ insert: graphQuads(`g${g}`, 5, 'second '), delete: graphQuads(`g${g}`, 20) }));
  for (let g = 30; g < 35; g++) await store.commit(store.begin({ insert: graphQuads(`g${g}`, 12) }));
}

const imageRead = (log: string[]) =>
  log.some((line) => /^memory image of snapshot \d+( and \d+ journal bytes)? \(\d+ MiB\) read in \d+ ms$/.test(line));
/** A start from the image a snapshot wrote (it holds no journal). */
const snapshotImageRead = (log: string[]) =>
  log.some((line) => /^memory image of snapshot \d+ \(\d+ MiB\) read in \d+ ms$/.test(line));
/** The log line of a snapshot that wrote its memory image. */
const imageAtSnapshot = (log: string[]) =>
  log.some((line) =>
    /^snapshot \d+ written in \d+ ms \(.*; memory image copied in \d+ ms, \d+ MiB written\)$/.test(line),
  );

/** Changes that replace revision 2 of every fourth object with revision 3 (deleting revision 2's metadata) and delete some quads. */
async function writeMore(store: DurableStore, objects: number): Promise<void> {
  for (let i = 0; i < objects; i += 4) {
    const tx = store.begin();
    tx.revisions.push({
      revision: revisionOf(i, 3),
      triples: objectAt(i, 3),
      replaces: { revision: revisionOf(i, 2), triples: objectAt(i, 2) },
    });
    await store.commit(tx);
  }
  for (let g = 20; g < 25; g++)
    await store.commit(store.begin({ insert: graphQuads(`g${g}`, 3, 'third '), delete: graphQuads(`g${g}`, 10) }));
}

/** What a start from the snapshot gives (a store opened without images, closed at once: it removes any image there). */
async function fromSnapshot(dir: string): Promise<{ contents: string; events: string[] }> {
  const { store, log } = await openStore(dir, { memoryImage: false });
  try {
    expect(imageRead(log)).to.equal(false);
    return { contents: await contents(store), events: await storedEvents(store) };
  } finally {
    await store.close();
  }
}

describe('memory image of the hot index (store.memoryImage)', function () {
  this.timeout(120_000);
  let dir: string;
  let remove: () => Promise<void>;
  /** The events the store that wrote the image would publish at start. */
  let stopped: string[];
  beforeEach(async () => ({ dir, remove } = await tempDir()));
  afterEach(() => remove());

  /** Writes the data, stops cleanly (an image is written) and returns what the store held. */
  async function stopWithImage(): Promise<string> {
    const { store, log } = await openStore(dir);
    await writeData(store);
    const before = await contents(store);
    stopped = await storedEvents(store);
    await store.close();
    expect(
      log.some((line) => /^memory image of \d+ quads written in \d+ ms \(\d+ MiB\)$/.test(line)),
      log.join('\n'),
    ).to.equal(true);
    expect(await readdir(dir)).to.include(IMAGE_FILE);
    return before;
  }

  it('a start after a clean stop reads the image: every quad, graph and query answer is as before, and the image goes', async () => {
    const before = await stopWithImage();
    const { store, log } = await openStore(dir);
    try {
      expect(imageRead(log), log.join('\n')).to.equal(true);
      expect(await readdir(dir)).not.to.include(IMAGE_FILE);
      expect(await contents(store)).to.equal(before);
      expect(store.capacity().quads).to.equal(allQuads(store.index).length);
      const events = await storedEvents(store);
      expect(events.filter((e) => e.includes('"revision-written"')).length).to.equal(15);
      expect(events).to.deep.equal(stopped);
    } finally {
      await store.close();
    }
  });

  it('writes after a start from the image of a clean stop are kept by the journal: after a crash the start loads the snapshot (that image is gone) and replays them', async () => {
    await stopWithImage();
    const { store } = await openStore(dir);
    await writeMore(store, 30);
    await store.commit(store.begin({ insert: graphQuads('after', 7), delete: graphQuads('g12', 3) }));
    const expected = await contents(store);
    const events = await storedEvents(store);
    // Not closed: as after a crash, the journal holds more than the clean stop's image, which the start after it removed.
    const { store: crashed, log } = await openStore(dir);
    try {
      expect(imageRead(log), log.join('\n')).to.equal(false);
      expect(await contents(crashed)).to.equal(expected);
      expect(crashed.capacity().quads).to.equal(allQuads(crashed.index).length);
      expect(await storedEvents(crashed)).to.deep.equal(events);
    } finally {
      await crashed.close();
    }
    expect(await fromSnapshot(dir)).to.deep.equal({ contents: expected, events });
    await store.close();
  });

  it('a snapshot writes the image of what it holds; after a crash, a start reads it and replays the journal after it: quads, revision metadata and archive as a start from the snapshot gives them', async () => {
    const { store, log } = await openStore(dir);
    await writeData(store);
    await store.snapshot();
    expect(imageAtSnapshot(log), log.join('\n')).to.equal(true);
    expect(await readdir(dir)).to.include(IMAGE_FILE);
    // Revisions replaced after the image (their metadata deleted), new objects and revisions, quads deleted and added.
    await writeMore(store, 30);
    await writeObjects(store, 30, 36);
    const expected = await contents(store);
    const events = await storedEvents(store);
    const archived = async (s: DurableStore) => {
      const revisions: string[] = [];
      for (const i of Array(36).keys()) {
        for (const n of [1, 2, 3])
          revisions.push(
            JSON.stringify([
              await s.revision(objectIri(i), n),
              (await s.graphTriples(revisionGraph(objectIri(i), n))).length,
            ]),
          );
      }
      return revisions;
    };
    const archive = await archived(store);
    const { store: crashed, log: crashLog } = await openStore(dir);
    try {
      expect(snapshotImageRead(crashLog), crashLog.join('\n')).to.equal(true);
      expect(
        crashLog.some((line) => /^store recovered: snapshot \d+, [1-9]\d* journal records/.test(line)),
        crashLog.join('\n'),
      ).to.equal(true);
      expect(await contents(crashed)).to.equal(expected);
      expect(crashed.capacity().quads).to.equal(allQuads(crashed.index).length);
      expect(await storedEvents(crashed)).to.deep.equal(events);
      expect(events.filter((e) => e.includes('"revision-written"')).length).to.equal(18);
      expect(await archived(crashed)).to.deep.equal(archive);
      expect(await readdir(dir)).to.include(IMAGE_FILE);
    } finally {
      await crashed.close();
    }
    expect(await fromSnapshot(dir)).to.deep.equal({ contents: expected, events });
    await store.close();
  });

  /** A store whose snapshot wrote an image, then written to: returns a copy of that image (`stale.image`) and what the store holds. */
  async function imageOfSnapshotThenMore(): Promise<{ store: DurableStore; expected: string }> {
    const { store, log } = await openStore(dir);
    await writeData(store);
    await store.snapshot();
    expect(imageAtSnapshot(log), log.join('\n')).to.equal(true);
    await copyFile(join(dir, IMAGE_FILE), join(dir, 'stale.image'));
    await writeMore(store, 30);
    return { store, expected: await contents(store) };
  }

  it('an image of an older snapshot is refused as stale (and removed): the start loads the newest snapshot', async () => {
    const { store, expected } = await imageOfSnapshotThenMore();
    await store.snapshot();
    await copyFile(join(dir, 'stale.image'), join(dir, IMAGE_FILE));
    const { store: crashed, log } = await openStore(dir);
    try {
      expect(log, log.join('\n')).to.include(
        `memory image ${IMAGE_FILE} not used (it does not reflect the newest snapshot and the journal after it): the store loads its snapshot`,
      );
      expect(imageRead(log)).to.equal(false);
      expect(await contents(crashed)).to.equal(expected);
      expect(await readdir(dir)).not.to.include(IMAGE_FILE);
    } finally {
      await crashed.close();
      await store.close();
    }
  });

  it('a crash while the image of a snapshot is written (after the snapshot is in place) leaves the older image and a temp file: both refused and removed', async () => {
    const { store, expected } = await imageOfSnapshotThenMore();
    await store.snapshot();
    // What the crash leaves: the new snapshot in place, the image of the one before, the new image half-written in its temp file.
    const image = await readFile(join(dir, IMAGE_FILE));
    await writeFile(join(dir, `${IMAGE_FILE}.tmp`), image.subarray(0, image.length / 2));
    await copyFile(join(dir, 'stale.image'), join(dir, IMAGE_FILE));
    const { store: crashed, log } = await openStore(dir);
    try {
      expect(log, log.join('\n')).to.include(
        `memory image ${IMAGE_FILE} not used (it does not reflect the newest snapshot and the journal after it): the store loads its snapshot`,
      );
      expect(await contents(crashed)).to.equal(expected);
      expect(await readdir(dir)).not.to.include.members([IMAGE_FILE, `${IMAGE_FILE}.tmp`]);
    } finally {
      await crashed.close();
      await store.close();
    }
  });

  it('an image cut short where it should be whole (its temp file renamed early, say) is refused: the start loads the snapshot', async () => {
    const { store, expected } = await imageOfSnapshotThenMore();
    await truncate(join(dir, IMAGE_FILE), Math.floor((await readFile(join(dir, IMAGE_FILE))).length / 2));
    const { store: crashed, log } = await openStore(dir);
    try {
      expect(log, log.join('\n')).to.include(
        `memory image ${IMAGE_FILE} not used (its size does not match its header): the store loads its snapshot`,
      );
      expect(await contents(crashed)).to.equal(expected);
      expect(await readdir(dir)).not.to.include(IMAGE_FILE);
    } finally {
      await crashed.close();
      await store.close();
    }
  });

  /** Changes the image file in place: `change` gets it open and its header text (the 64 KiB before the memory). */
  async function patch(path: string, change: (file: FileHandle, header: string) => Promise<unknown>): Promise<void> {
    const file = await open(path, 'r+');
    try {
      const head = Buffer.alloc(64 * 1024);
      await file.read(head, 0, head.length, 0);
      await change(file, head.toString('utf8'));
    } finally {
      await file.close();
    }
  }

  const damages: { name: string; damage: (path: string) => Promise<unknown>; why: string }[] = [
    {
      name: 'a flipped byte in the memory',
      why: 'damaged: checksum mismatch',
      damage: (path) =>
        patch(path, async (file, header) => {
          const { chunks } = JSON.parse(header.split('\n')[1]) as { chunks: string };
          const at = 64 * 1024 + chunks.indexOf('1') * 4 * 1024 * 1024 + 1000;
          const byte = Buffer.alloc(1);
          await file.read(byte, 0, 1, at);
          byte[0] ^= 0x10;
          await file.write(byte, 0, 1, at);
        }),
    },
    {
      name: 'a changed header field (where the store is in the memory)',
      why: 'damaged: checksum mismatch',
      damage: (path) =>
        patch(path, (file, header) =>
          file.write(
            header.replace(/"storePointer":(\d)/, (_, d: string) => `"storePointer":${(Number(d) + 1) % 10}`),
            0,
          ),
        ),
    },
    {
      name: 'a truncated file',
      why: 'its size does not match its header',
      damage: (path) => truncate(path, 64 * 1024 + 4096),
    },
    { name: 'a file cut inside its header', why: 'not an image, or cut short', damage: (path) => truncate(path, 100) },
    {
      name: 'an image of another version of the WASM code',
      why: 'written by another version of Oxigraph',
      damage: (path) =>
        patch(path, (file, header) => file.write(header.replace(/"wasm":"[0-9a-f]{4}/, '"wasm":"0000'), 0)),
    },
    {
      name: 'a foreign file',
      why: 'not an image, or cut short',
      damage: (path) => writeFile(path, 'not an image at all\n'.repeat(10_000)),
    },
  ];
  for (const { name, damage, why } of damages) {
    it(`${name}: the start loads the snapshot instead, says why, and removes the image`, async () => {
      const before = await stopWithImage();
      await damage(join(dir, IMAGE_FILE));
      const { store, log } = await openStore(dir);
      try {
        expect(log, log.join('\n')).to.include(
          `memory image ${IMAGE_FILE} not used (${why}): the store loads its snapshot`,
        );
        expect(imageRead(log)).to.equal(false);
        expect(await contents(store)).to.equal(before);
        expect(await readdir(dir)).not.to.include(IMAGE_FILE);
      } finally {
        await store.close();
      }
    });
  }

  it('at snapshots turned off (store.imageAtSnapshot): a snapshot writes none and removes the one there, which reflects an older snapshot', async () => {
    await stopWithImage();
    const { store, log } = await openStore(dir, { imageAtSnapshot: false });
    expect(imageRead(log)).to.equal(true);
    await writeMore(store, 30);
    await store.snapshot();
    expect(imageAtSnapshot(log)).to.equal(false);
    expect(await readdir(dir)).not.to.include(IMAGE_FILE);
    await store.close();
  });

  it('below store.memoryImageMinQuads: neither a snapshot nor a clean stop writes an image (the one there goes, as it reflects an older snapshot); at it, a clean stop writes one', async () => {
    await stopWithImage();
    const { store, log } = await openStore(dir, { memoryImageMinQuads: 1_000_000_000 });
    expect(imageRead(log)).to.equal(true);
    await writeMore(store, 30);
    await store.snapshot();
    expect(imageAtSnapshot(log), log.join('\n')).to.equal(false);
    const held = store.capacity().quads;
    await store.close();
    expect(
      log.some((line) => /^memory image of \d+ quads written/.test(line)),
      log.join('\n'),
    ).to.equal(false);
    expect(await readdir(dir)).not.to.include(IMAGE_FILE);
    const { store: atThreshold, log: atLog } = await openStore(dir, { memoryImageMinQuads: held });
    await atThreshold.close();
    expect(
      atLog.some((line) => line.startsWith(`memory image of ${held} quads written`)),
      atLog.join('\n'),
    ).to.equal(true);
  });

  it('turned off: a clean stop writes no image, and a start removes one left from before', async () => {
    const before = await stopWithImage();
    const { store, log } = await openStore(dir, { memoryImage: false });
    expect(imageRead(log)).to.equal(false);
    expect(await readdir(dir)).not.to.include(IMAGE_FILE);
    expect(await contents(store)).to.equal(before);
    await store.close();
    expect(await readdir(dir)).not.to.include(IMAGE_FILE);
  });
});
