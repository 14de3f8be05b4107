import { expect } from 'chai';
import { mkdir, readdir, readFile, rmdir, stat, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { segmentName } from '../src/store/embedded/journal/journal.js';
import { snapshotName } from '../src/store/embedded/snapshot/snapshot.js';
import type { DurableStore, DurableStoreOptions } from '../src/store/embedded/durable-store.js';
import { defaultGraph, literal, namedNode, quad } from '../src/rdf/terms.js';
import { allQuads, EX, graphQuads, openStore, tempDir, type OpenedStore } from './support/store-data.js';

/** A store without memory images: what is tested here is the snapshot and the journal a start reads without one (images: index-image.test.ts). */
const openPlain = (dir: string, options: Partial<DurableStoreOptions> = {}) =>
  openStore(dir, { memoryImage: false, ...options });

/** Inserts, then changes that delete part of what was inserted, across a few graphs. */
async function writeHistory(store: DurableStore, prefix: string): Promise<void> {
  for (let g = 0; g < 5; g++) await store.commit(store.begin({ insert: graphQuads(`${prefix}${g}`, 10) }));
  for (let g = 0; g < 5; g++) {
    await store.commit(
      store.begin({ delete: graphQuads(`${prefix}${g}`, 4), insert: graphQuads(`${prefix}${g}`, 2, 'changed ') }),
    );
  }
}

/** Opens a second store on `dir`, as after a crash (`live` was never closed), and checks it holds what `live` holds. */
async function reopenEqual(live: DurableStore, dir: string): Promise<OpenedStore> {
  const reopened = await openPlain(dir);
  expect(allQuads(reopened.store.index)).to.deep.equal(allQuads(live.index));
  return reopened;
}

/** Opens `dir` from its snapshot, expecting a refusal. */
async function openFails(dir: string): Promise<Error> {
  let error: Error | undefined;
  await openPlain(dir).catch((err: Error) => (error = err));
  if (!error) throw new Error('the store opened');
  return error;
}

/** Journal segments and snapshots in a data directory (the revision archive's directory aside), sorted. */
const storeFiles = async (dir: string) => (await readdir(dir)).filter((name) => name !== 'archive').sort();

describe('snapshots', () => {
  let dir: string;
  let remove: () => Promise<void>;
  beforeEach(async () => ({ dir, remove } = await tempDir()));
  afterEach(() => remove());

  it('snapshot + replay gives an identical store, default graph included', async () => {
    const { store } = await openPlain(dir);
    await writeHistory(store, 'g');
    await store.commit(
      store.begin({
        insert: [quad(namedNode(`${EX}s`), namedNode(`${EX}p`), literal('in the default graph'), defaultGraph())],
      }),
    );
    await store.snapshot();
    expect(await storeFiles(dir)).to.deep.equal([segmentName(2), snapshotName(2)]);

    const reopened = await reopenEqual(store, dir);
    expect(reopened.log).to.deep.equal([`store recovered: snapshot 2, 0 journal records, ${store.index.size} quads`]);
    await store.close();
    await reopened.store.close();
  });

  it('startup loads the snapshot and replays the later segments', async () => {
    const { store } = await openPlain(dir);
    await writeHistory(store, 'before');
    await store.snapshot();
    await writeHistory(store, 'after');
    await store.commit(store.begin({ insert: [], delete: graphQuads('before0', 10) })); // undoes part of what the snapshot holds

    const reopened = await reopenEqual(store, dir);
    expect(reopened.log).to.deep.equal([`store recovered: snapshot 2, 11 journal records, ${store.index.size} quads`]);
    await store.close();
    await reopened.store.close();
  });

  it('a snapshot taken while writes continue holds what was written before it, and startup converges to the live store', async function () {
    this.timeout(60_000);
    const { store } = await openPlain(dir);
    const graphs = 8000;
    for (let g = 0; g < graphs; g += 500) {
      await store.commit(
        store.begin({ insert: Array.from({ length: 500 }, (_, i) => graphQuads(`w${g + i}`, 5)).flat() }),
      );
    }
    let finished = false;
    const snapshot = store.snapshot().then(() => (finished = true));
    let during = 0;
    let n = 0;
    const writer = async () => {
      while (!finished) {
        const g = `w${(n++ * 7919) % graphs}`;
        await store.commit(
          store.begin({
            delete: graphQuads(g, 2),
            insert: [...graphQuads(g, 1, 'during '), ...graphQuads(`new${n}`, 3)],
          }),
        );
        if (!finished) during += 1;
      }
    };
    await Promise.all([snapshot, writer(), writer(), writer(), writer()]);
    await store.commit(store.begin({ insert: [], delete: graphQuads('w0', 5) }));
    expect(during).to.be.greaterThan(0, 'no write completed while the snapshot was written');
    const snapshotText = await readFile(join(dir, snapshotName(2)), 'utf8');
    expect(snapshotText.length).to.be.greaterThan(4 * 1024 * 1024, 'the snapshot should span several read chunks');
    // Folded from the closed segments, not dumped from the live store: exactly what was written before the rotation.
    expect(snapshotText).to.not.include('value during');
    expect(snapshotText).to.include('w7999');

    const reopened = await reopenEqual(store, dir);
    expect(reopened.log[0]).to.match(/^store recovered: snapshot 2, [1-9]\d* journal records/);
    await store.close();
    await reopened.store.close();
  });

  it('the journal passing snapshotAfterBytes triggers a snapshot and older segments go', async () => {
    const { store, log } = await openPlain(dir, { snapshotAfterBytes: 4096 });
    await writeHistory(store, 'g');
    await store.close();
    expect(log.some((line) => /^snapshot \d+ written/.test(line))).to.equal(true);
    const files = await readdir(dir);
    expect(files.filter((f) => f.startsWith('snapshot-'))).to.have.length(1);
    expect(files.filter((f) => f.startsWith('journal-')).length).to.be.at.most(2);
    const reopened = await reopenEqual(store, dir);
    await reopened.store.close();
  });

  it('the next snapshot waits until the journal is as large as the last snapshot', async () => {
    const { store, log } = await openPlain(dir, { snapshotAfterBytes: 1024 });
    await store.commit(store.begin({ insert: Array.from({ length: 400 }, (_, i) => graphQuads(`big${i}`, 5)).flat() }));
    await store.snapshot();
    const snapshots = () => log.filter((line) => /^snapshot \d+ written/.test(line)).length;
    expect(snapshots()).to.equal(1);
    const snapshotBytes = (await stat(join(dir, snapshotName(2)))).size;
    // Small writes past snapshotAfterBytes but well below the snapshot's size: no new snapshot.
    for (let i = 0; i < 20; i++) await store.commit(store.begin({ insert: graphQuads(`small${i}`, 2) }));
    await new Promise((resolve) => setTimeout(resolve, 100)); // time for a snapshot, had one started
    expect(snapshots(), 'snapshots after small writes').to.equal(1);
    // Writes adding up to more than the last snapshot do trigger one.
    const started = snapshots();
    let written = 0;
    for (let i = 0; written < snapshotBytes * 1.2; i++) {
      const quads = graphQuads(`more${i}`, 20);
      written += quads.length * 80;
      await store.commit(store.begin({ insert: quads }));
    }
    await store.close();
    expect(snapshots()).to.be.greaterThan(started);
  });

  it('past a snapshot larger than maxReplayBytes, the journal reaching maxReplayBytes triggers the next, so a start after a crash replays only the journal after it', async () => {
    const maxReplayBytes = 16 * 1024;
    const { store, log } = await openPlain(dir, { snapshotAfterBytes: 1024, maxReplayBytes });
    const snapshots = () => log.filter((line) => /^snapshot \d+ written/.test(line)).length;
    await store.commit(store.begin({ insert: Array.from({ length: 400 }, (_, i) => graphQuads(`big${i}`, 5)).flat() }));
    await store.snapshot();
    const snapshotBytes = (await stat(join(dir, snapshotName(2)))).size;
    expect(snapshotBytes).to.be.greaterThan(4 * maxReplayBytes);
    // One commit at a time until the journal reaches maxReplayBytes, far below the last snapshot's size.
    let journalBytes = 0;
    for (let i = 0; journalBytes < maxReplayBytes; i++) {
      await store.commit(store.begin({ insert: graphQuads(`small${i}`, 10) }));
      journalBytes = (await stat(join(dir, segmentName(2)))).size;
    }
    expect(journalBytes).to.be.below(snapshotBytes / 4);
    for (let waited = 0; snapshots() < 2 && waited < 10_000; waited += 20)
      await new Promise((resolve) => setTimeout(resolve, 20));
    expect(snapshots(), `no snapshot once the journal reached maxReplayBytes; log:\n${log.join('\n')}`).to.equal(2);
    expect(await storeFiles(dir)).to.deep.equal([segmentName(3), snapshotName(3)]);

    // Acknowledged after the snapshot, then a crash (the store is never closed): the start replays these only.
    for (let i = 0; i < 5; i++) await store.commit(store.begin({ insert: graphQuads(`after${i}`, 10) }));
    const reopened = await reopenEqual(store, dir);
    expect(reopened.log).to.deep.equal([`store recovered: snapshot 3, 5 journal records, ${store.index.size} quads`]);
    await store.close();
    await reopened.store.close();
  });

  describe('a damaged snapshot is refused', () => {
    let path: string;
    beforeEach(async () => {
      const { store } = await openPlain(dir);
      await writeHistory(store, 'g');
      await store.snapshot();
      await store.close();
      path = join(dir, snapshotName(2));
    });

    it('cut short: incomplete', async () => {
      const { size } = await stat(path);
      await truncate(path, size - 10);
      expect((await openFails(dir)).message).to.match(
        /snapshot snapshot-00000002\.nq is incomplete \(no end line\); refusing to start/,
      );
    });

    it('cut at a line end before the end line: incomplete', async () => {
      const text = await readFile(path, 'utf8');
      await writeFile(path, text.slice(0, text.lastIndexOf('\n', text.length - 2) + 1));
      expect((await openFails(dir)).message).to.match(/is incomplete/);
    });

    it('one changed character that still parses: checksum mismatch', async () => {
      const text = await readFile(path, 'utf8');
      await writeFile(path, text.replace('value', 'valuf'));
      expect((await openFails(dir)).message).to.match(
        /snapshot snapshot-00000002\.nq is corrupt \(checksum mismatch\)/,
      );
    });

    it('data after the end line', async () => {
      const text = await readFile(path, 'utf8');
      await writeFile(path, `${text}${text.split('\n')[0]}\n`);
      expect((await openFails(dir)).message).to.match(/has a damaged end line or data after it/);
    });
  });

  it('a failed snapshot keeps the journal: nothing is lost and the next one succeeds', async () => {
    const { store, log } = await openPlain(dir);
    await writeHistory(store, 'g');
    const blocker = join(dir, `${snapshotName(2)}.tmp`);
    await mkdir(blocker); // the temp file cannot be created: a real EISDIR from open()
    await store.snapshot();
    expect(log.at(-1)).to.match(/^snapshot failed \(journal kept, nothing lost\): EISDIR/);
    await writeHistory(store, 'later');
    await rmdir(blocker);

    const reopened = await reopenEqual(store, dir);
    expect(reopened.log).to.deep.equal([
      `store recovered: snapshot none, 20 journal records, ${store.index.size} quads`,
    ]);
    await reopened.store.snapshot();
    expect(await storeFiles(dir)).to.deep.equal([segmentName(3), snapshotName(3)]);
    await store.close();
    await reopened.store.close();
  });

  it('a temp file left by a snapshot that never finished is ignored and removed', async () => {
    const { store } = await openPlain(dir);
    await writeHistory(store, 'g');
    await store.close();
    await writeFile(join(dir, `${snapshotName(2)}.tmp`), '<https://e.x/s> <https://e.x/p> "half');
    const reopened = await reopenEqual(store, dir);
    expect(await storeFiles(dir)).to.deep.equal([segmentName(1)]);
    await reopened.store.close();
  });
});
