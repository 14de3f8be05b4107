import { expect } from 'chai';
import fc from 'fast-check';
import { compareKeys, open, type Database, type RootDatabase } from 'lmdb';
import { ArchiveDb, MAX_UNWRITTEN } from '../src/store/embedded/archive/archive-db.js';
import {
  RequestArchive,
  type ArchivedRecord,
  type RequestByObjectKey,
  type RequestByTimeKey,
} from '../src/store/embedded/archive/request-archive.js';
import { tempDir } from './support/store-data.js';

describe('archive: walking an index down one key at a time', () => {
  let env: RootDatabase;
  let remove: () => Promise<void>;
  let opened = 0;
  before(async () => {
    const dir = await tempDir();
    remove = dir.remove;
    env = open({ path: dir.dir, maxDbs: 200 });
  });
  after(async () => {
    // Whatever waits for its hand-over to LMDB goes now, before the environment closes.
    for (const db of made) db.write();
    await env.flushed;
    await env.close();
    await remove();
  });
  const made: ArchiveDb<never, never>[] = [];
  const archiveDb = <K extends RequestByObjectKey | RequestByTimeKey | string, V>(name: string) => {
    const db = new ArchiveDb<K, V>(env.openDB<V, K>({ name: `${name}-${opened++}` }), (err) =>
      expect.fail(err.message),
    );
    made.push(db as unknown as ArchiveDb<never, never>);
    return db;
  };
  const index = () => archiveDb<RequestByObjectKey, 1>('by-object');
  /** Every key of `object` from the newest down, by keyBelow. */
  const walk = (db: ArchiveDb<RequestByObjectKey, 1>, object: string) => {
    const keys: RequestByObjectKey[] = [];
    for (
      let key = db.keyBelow([object, Number.MAX_SAFE_INTEGER, ''], [object, 0, '']);
      key;
      key = db.keyBelow(key, [object, 0, ''])
    )
      keys.push(key);
    return keys;
  };
  const newestFirst = (keys: RequestByObjectKey[]) =>
    [...keys].sort((a, b) => b[1] - a[1] || (a[2] < b[2] ? 1 : a[2] > b[2] ? -1 : 0));

  it('hands entries to LMDB once MAX_UNWRITTEN are waiting, without waiting for the delay, and keeps them readable throughout', async () => {
    const name = `burst-${opened}`;
    const db = archiveDb<string, number>('burst');
    const lmdb = env.openDB<number, string>({ name });
    for (let i = 0; i < MAX_UNWRITTEN; i++) db.put(`k${i}`, i);
    await env.flushed;
    lmdb.resetReadTxn();
    expect([lmdb.get('k0'), lmdb.get(`k${MAX_UNWRITTEN - 1}`)]).to.deep.equal([0, MAX_UNWRITTEN - 1]);
    expect(db.get(`k${MAX_UNWRITTEN - 2}`)).to.equal(MAX_UNWRITTEN - 2);
  });

  it('gives the keys of a range newest first, committed or not, removed ones left out, and nothing past the floor', async () => {
    const db = index();
    const committed: RequestByObjectKey[] = [
      ['o', 1, 'r1'],
      ['o', 5, 'r5'],
      ['o', 5, 'r6'],
      ['o', 9, 'r9'],
      ['n', 7, 'other'],
      ['p', 0, 'after'],
    ];
    for (const key of committed) db.put(key, 1);
    db.write();
    await env.flushed;
    // Not yet handed to LMDB: one new key between committed ones, one removed.
    db.put(['o', 6, 'r-new'], 1);
    db.remove(['o', 5, 'r5']);
    expect(walk(db, 'o')).to.deep.equal([
      ['o', 9, 'r9'],
      ['o', 6, 'r-new'],
      ['o', 5, 'r6'],
      ['o', 1, 'r1'],
    ]);
    db.write();
    await env.flushed;
    expect(walk(db, 'o')).to.deep.equal([
      ['o', 9, 'r9'],
      ['o', 6, 'r-new'],
      ['o', 5, 'r6'],
      ['o', 1, 'r1'],
    ]);
    expect(walk(db, 'absent')).to.deep.equal([]);
  });

  it('agrees with the whole range read and sorted, for keys put and removed in any order, some committed', async () => {
    const key = fc.tuple(
      fc.constantFrom('a', 'b', 'b/1', 'c'),
      fc.integer({ min: 0, max: 20 }),
      fc.constantFrom('g', 'h', 'ü', 'g2'),
    );
    const step = fc.record({ key, removed: fc.boolean(), committed: fc.boolean() });
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 40 }), async (steps) => {
        const db = index();
        for (const { key: k, removed, committed } of steps) {
          if (removed) db.remove(k as RequestByObjectKey);
          else db.put(k as RequestByObjectKey, 1);
          if (committed) {
            db.write();
            await env.flushed;
          }
        }
        for (const object of ['a', 'b', 'b/1', 'c']) {
          const all = db
            .range([object, 0, ''], [object, Number.MAX_SAFE_INTEGER, ''], (k) => k[0] === object)
            .map(({ key: k }) => k);
          expect(walk(db, object), object).to.deep.equal(newestFirst(all));
          // The range itself comes in LMDB's key order, pending entries merged in.
          expect(all, object).to.deep.equal([...all].sort(compareKeys));
        }
      }),
      { numRuns: 60 },
    );
  });

  it("walks a request archive's requests about an object from the newest down, by newestAbout", async () => {
    const byObject = index();
    const requests = new RequestArchive({
      records: archiveDb<RequestByTimeKey, ArchivedRecord>('records'),
      times: archiveDb<string, number>('times'),
      graphs: archiveDb<string, string>('graphs'),
      byObject,
    });
    for (let i = 0; i < 50; i++) byObject.put(['https://x.example/lo/1', 1000 + i, `https://x.example/ar/${i}`], 1);
    byObject.put(['https://x.example/lo/2', 5000, 'https://x.example/ar/other'], 1);
    const walked: string[] = [];
    for (
      let key = requests.newestAbout('https://x.example/lo/1');
      key;
      key = requests.newestAbout('https://x.example/lo/1', key)
    )
      walked.push(key[2]);
    expect(walked).to.deep.equal(Array.from({ length: 50 }, (_, i) => `https://x.example/ar/${49 - i}`));
  });
});

describe('archive: a commit LMDB fails', () => {
  it('is remembered as failed, and no promise of it is left rejected unheard (which ends the process)', async () => {
    // LMDB refusing a commit (its free list corrupt, as lmdb-js reported once under load) cannot be brought about at
    // will: a database stands in that rejects as lmdb-js does, a batch spanning two transactions, each failed commit
    // carrying one more rejected promise with LMDB's own error.
    const failedCommit = () => {
      const cause = Promise.reject(new Error('MDB_BAD_TXN: Transaction must abort'));
      return Promise.reject(
        Object.assign(new Error('Commit failed (see commitError for details)'), { commitError: cause }),
      );
    };
    const transactions = [failedCommit(), failedCommit()];
    let written = 0;
    const lmdb = { put: () => transactions[written++ < 2 ? 0 : 1], remove: () => transactions[1] };
    const unheard: unknown[] = [];
    const listen = (reason: unknown) => unheard.push(reason);
    process.on('unhandledRejection', listen);
    try {
      const failures: Error[] = [];
      const db = new ArchiveDb<string, string>(lmdb as unknown as Database<string, string>, (err) =>
        failures.push(err),
      );
      for (const key of ['a', 'b', 'c']) db.put(key, `value of ${key}`);
      db.write();
      for (let turn = 0; turn < 5; turn++) await new Promise((resolve) => setImmediate(resolve));
      expect(failures.map((err) => err.message)).to.deep.equal(['Commit failed (see commitError for details)']);
      expect(unheard).to.deep.equal([]);
      expect(db.get('c')).to.equal('value of c', 'what failed is still read from memory');
    } finally {
      process.off('unhandledRejection', listen);
    }
  });
});
