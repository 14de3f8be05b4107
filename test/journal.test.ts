import { expect } from 'chai';
import { statSync } from 'node:fs';
import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  encodeRecord,
  Journal,
  JournalCorruptError,
  recoverJournal,
  scanSegment,
  segmentName,
} from '../src/store/embedded/journal/journal.js';
import type { CommitRecord, CommitBytes } from '../src/store/commit-record.js';
import { namedNode, quad } from '../src/rdf/terms.js';
import { allQuads, EX, graphQuads, openStore, tempDir } from './support/store-data.js';

const RECORDS: CommitRecord[] = [
  { delete: '', insert: '<https://e.x/s> <https://e.x/p> "plain" <https://e.x/g> .\n' },
  {
    delete: '<https://e.x/s> <https://e.x/p> "plain" <https://e.x/g> .\n',
    insert: '<https://e.x/s> <https://e.x/p> "é \\"🚚\\"" <https://e.x/g> .\n',
  },
  { delete: '<https://e.x/s> <https://e.x/q> "gone" <https://e.x/g> .\n', insert: '' },
];

const encodeAll = (records: CommitRecord[]) => Buffer.concat(records.map(encodeRecord));

/** Byte offset where each record starts, plus the end of the last one. */
function boundaries(records: CommitRecord[]): number[] {
  const out = [0];
  for (const r of records) out.push(out.at(-1)! + encodeRecord(r).length);
  return out;
}

const utf8 = new TextDecoder();
const asText = (r: CommitBytes): CommitRecord => ({ delete: utf8.decode(r.delete), insert: utf8.decode(r.insert) });

async function recover(dir: string, from = 1): Promise<{ records: CommitRecord[]; log: string[]; segment: number }> {
  const records: CommitRecord[] = [];
  const log: string[] = [];
  const result = await recoverJournal(
    dir,
    from,
    (m) => log.push(m),
    (batch) => records.push(...batch.map(asText)),
  );
  return { records, log, segment: result.segment };
}

/** The records of one segment file, without touching it. */
async function scan(path: string): Promise<CommitRecord[]> {
  const records: CommitRecord[] = [];
  await scanSegment(path, 'test', (batch) => records.push(...batch.map(asText)));
  return records;
}

const openJournal = (dir: string, fsync = true) =>
  Journal.open({ dir, segment: 1, fsync, snapshotAfterBytes: Number.MAX_SAFE_INTEGER, onSizeExceeded: () => {} });

describe('journal', () => {
  let dir: string;
  let remove: () => Promise<void>;
  beforeEach(async () => ({ dir, remove } = await tempDir()));
  afterEach(() => remove());

  describe('record encoding', () => {
    it('decodes what it encodes, byte for byte, including empty parts and characters outside the BMP', async () => {
      const path = join(dir, segmentName(1));
      await writeFile(path, encodeAll(RECORDS));
      const records: CommitRecord[] = [];
      const result = await scanSegment(path, 'test', (batch) => records.push(...batch.map(asText)));
      expect(records).to.deep.equal(RECORDS);
      expect(result).to.deep.equal({
        size: encodeAll(RECORDS).length,
        validBytes: encodeAll(RECORDS).length,
        damagedTail: undefined,
      });
    });

    it('a segment larger than the read chunk reads back whole, records across chunk boundaries included', async () => {
      const journal = await openJournal(dir, false);
      const records = Array.from(
        { length: 1500 },
        (_, i): CommitRecord => ({
          delete: i % 3 === 0 ? `<https://e.x/s> <https://e.x/p> "${i}" .\n` : '',
          insert: `<https://e.x/s> <https://e.x/p> "${'é'.repeat(i * 7)} ${i}" .\n`,
        }),
      );
      await Promise.all(records.map((r) => journal.append(r, () => {})));
      await journal.close();
      expect((await stat(join(dir, segmentName(1)))).size).to.be.greaterThan(8 * 1024 * 1024);
      expect((await recover(dir)).records).to.deep.equal(records);
    });

    it('an appended record reads back after reopening', async () => {
      const journal = await openJournal(dir);
      for (const r of RECORDS) await journal.append(r, () => {});
      await journal.close();
      expect((await recover(dir)).records).to.deep.equal(RECORDS);
    });
  });

  describe('a damaged last record', () => {
    const full = encodeAll(RECORDS);
    const [, , lastStart, end] = boundaries(RECORDS);
    const cuts = [lastStart + 1, lastStart + 15, lastStart + 16, lastStart + 17, end - 1];

    for (const cut of cuts) {
      it(`cut at byte ${cut - lastStart} of the record is dropped with a log line and cut off the file; appends continue cleanly`, async () => {
        const path = join(dir, segmentName(1));
        await writeFile(path, full.subarray(0, cut));
        const first = await recover(dir);
        expect(first.records).to.deep.equal(RECORDS.slice(0, 2));
        expect(first.log).to.have.length(1);
        expect(first.log[0]).to.match(
          new RegExp(`journal-00000001\\.log: dropped .* \\(${cut - lastStart} bytes from byte ${lastStart}\\)`),
        );
        expect((await stat(path)).size).to.equal(lastStart);

        const journal = await openJournal(dir);
        await journal.append(RECORDS[0], () => {});
        await journal.close();
        const second = await recover(dir);
        expect(second.records).to.deep.equal([RECORDS[0], RECORDS[1], RECORDS[0]]);
        expect(second.log).to.deep.equal([]);
      });
    }

    it('a complete last record failing its checksum is dropped', async () => {
      const damaged = Buffer.from(full);
      damaged[end - 3] ^= 0x01;
      await writeFile(join(dir, segmentName(1)), damaged);
      const { records, log } = await recover(dir);
      expect(records).to.deep.equal(RECORDS.slice(0, 2));
      expect(log[0]).to.match(/dropped a last record that fails its checksum/);
    });

    it('zero bytes after the last record (a file extended by a power cut) are dropped', async () => {
      await writeFile(join(dir, segmentName(1)), Buffer.concat([full, Buffer.alloc(4096)]));
      const { records, log } = await recover(dir);
      expect(records).to.deep.equal(RECORDS);
      expect(log[0]).to.match(/dropped zero bytes where a record should be \(4096 bytes from byte \d+\)/);
      expect((await stat(join(dir, segmentName(1)))).size).to.equal(full.length);
    });

    it('a damaged tail of the last segment holding data is dropped even if an empty segment follows it', async () => {
      await writeFile(join(dir, segmentName(1)), full.subarray(0, end - 1));
      await writeFile(join(dir, segmentName(2)), '');
      const { records, segment } = await recover(dir);
      expect(records).to.deep.equal(RECORDS.slice(0, 2));
      expect(segment).to.equal(2);
    });
  });

  describe('corruption in the middle stops startup', () => {
    const full = encodeAll(RECORDS);
    const [, secondStart] = boundaries(RECORDS);

    async function expectRefused(message: RegExp): Promise<void> {
      const before = await readFile(join(dir, segmentName(1)));
      let error: unknown;
      try {
        await recover(dir);
      } catch (err) {
        error = err;
      }
      expect(error).to.be.instanceOf(JournalCorruptError);
      expect((error as Error).message).to.match(message);
      expect(await readFile(join(dir, segmentName(1)))).to.deep.equal(before, 'a refused segment is left untouched');
    }

    it('a record failing its checksum with more records after it', async () => {
      const damaged = Buffer.from(full);
      damaged[secondStart + 20] ^= 0x40;
      await writeFile(join(dir, segmentName(1)), damaged);
      await expectRefused(
        new RegExp(
          `journal-00000001\\.log is corrupt at byte ${secondStart}: a record fails its checksum.*Refusing to start`,
        ),
      );
    });

    it('a damaged length field is caught by the header checksum, not taken for a torn write', async () => {
      const damaged = Buffer.from(full);
      damaged.writeUInt32LE(0x00ffffff, 0); // points far past the end of the file
      await writeFile(join(dir, segmentName(1)), damaged);
      await expectRefused(/is corrupt at byte 0: a record header fails its checksum/);
    });

    it('a damaged tail in a segment that later segments continue', async () => {
      await writeFile(join(dir, segmentName(1)), full.subarray(0, full.length - 1));
      await writeFile(join(dir, segmentName(2)), encodeRecord(RECORDS[0]));
      await expectRefused(
        /journal-00000001\.log ends in a record cut short .* but later segments hold records; refusing to start/,
      );
    });

    it('a missing segment', async () => {
      await writeFile(join(dir, segmentName(1)), full);
      await writeFile(join(dir, segmentName(3)), full);
      await expectRefused(/journal-00000002\.log is missing/);
    });

    it('the store does not open, with the same message', async () => {
      const { store } = await openStore(dir);
      await store.commit(store.begin({ insert: graphQuads('a', 3) }));
      await store.commit(store.begin({ insert: graphQuads('b', 3) }));
      await store.close();
      const path = join(dir, segmentName(1));
      const damaged = await readFile(path);
      damaged[20] ^= 0x01;
      await writeFile(path, damaged);
      let error: unknown;
      await openStore(dir).catch((err: unknown) => (error = err));
      expect((error as Error).message).to.match(
        /journal-00000001\.log is corrupt at byte 0: a record fails its checksum/,
      );
    });
  });

  describe('group commit', () => {
    it('concurrent appends share write + fdatasync rounds; each is applied in order, only once in the file', async () => {
      const journal = await openJournal(dir);
      const path = join(dir, segmentName(1));
      const count = 200;
      const records = Array.from(
        { length: count },
        (_, i): CommitRecord => ({ delete: '', insert: `<https://e.x/s> <https://e.x/p> "${i}" .\n` }),
      );
      const ends = boundaries(records).slice(1);
      const applied: number[] = [];
      const fileSizeWhenApplied: number[] = [];
      await Promise.all(
        records.map((record, i) =>
          journal.append(record, () => {
            applied.push(i);
            fileSizeWhenApplied.push(statSync(path).size);
          }),
        ),
      );
      expect(applied).to.deep.equal(Array.from({ length: count }, (_, i) => i));
      fileSizeWhenApplied.forEach((size, i) => {
        expect(size).to.be.at.least(ends[i], `record ${i} was applied before it was in the file`);
      });
      expect(await scan(path)).to.deep.equal(records);
      expect(journal.flushes).to.be.lessThan(count / 4);
      expect(journal.flushes).to.be.greaterThan(1);
      await journal.close();
    });

    it('an append made while a record is applied (a consumer of the after-commit stream committing in turn) is written and applied too', async () => {
      const journal = await openJournal(dir);
      const record = (i: number): CommitRecord => ({
        delete: '',
        insert: `<https://e.x/s> <https://e.x/p> "${i}" .\n`,
      });
      const applied: number[] = [];
      let inner: Promise<void> | undefined;
      await journal.append(record(0), () => {
        applied.push(0);
        inner = journal.append(record(1), () => applied.push(1));
      });
      await inner;
      expect(applied).to.deep.equal([0, 1]);
      await journal.close();
      expect((await recover(dir)).records).to.deep.equal([record(0), record(1)]);
    });

    it('rotation while appends flow: earlier records are applied when it resolves, none lost or doubled', async () => {
      const journal = await openJournal(dir);
      const applied: number[] = [];
      const record = (i: number): CommitRecord => ({
        delete: '',
        insert: `<https://e.x/s> <https://e.x/p> "${i}" .\n`,
      });
      const appends: Promise<void>[] = [];
      for (let i = 0; i < 50; i++) appends.push(journal.append(record(i), () => applied.push(i)));
      const rotated = journal.rotate().then((segment) => ({ segment, appliedThen: applied.length }));
      for (let i = 50; i < 100; i++) appends.push(journal.append(record(i), () => applied.push(i)));
      await Promise.all(appends);
      const { segment, appliedThen } = await rotated;
      await journal.close();

      expect(segment).to.equal(2);
      const inFirst = (await scan(join(dir, segmentName(1)))).length;
      expect(appliedThen).to.be.at.least(inFirst);
      expect(inFirst).to.be.at.least(1);
      const { records } = await recover(dir);
      expect(records).to.deep.equal(Array.from({ length: 100 }, (_, i) => record(i)));
    });
  });

  describe('live apply and replay agree', () => {
    it('what the live store applied is there after a restart, even an IRI a strict parser would refuse', async () => {
      const { store } = await openStore(dir);
      // "%zz" is not valid percent-encoding: a strict check after the record is on disk would
      // fail the request yet leave the record to be replayed (or to fail every start).
      const odd = quad(namedNode(`${EX}s`), namedNode(`${EX}p`), namedNode(`${EX}%zz`), namedNode(`${EX}g`));
      await store.commit(store.begin({ insert: [odd, ...graphQuads('g', 3)] }));
      await store.commit(store.begin({ insert: [], delete: graphQuads('g', 1) }));
      expect(allQuads(store.index)).to.have.length(3);
      const reopened = await openStore(dir);
      expect(allQuads(reopened.store.index)).to.deep.equal(allQuads(store.index));
      await store.close();
      await reopened.store.close();
    });

    it('a quad both deleted and inserted by one change stays, live and at replay (as with SPARQL DELETE/INSERT)', async () => {
      const { store } = await openStore(dir);
      const [kept, dropped] = graphQuads('g', 2);
      await store.commit(store.begin({ insert: [kept, dropped] }));
      await store.commit(store.begin({ delete: [kept, dropped], insert: [kept] }));
      const expected = allQuads(store.index);
      expect(expected).to.have.length(1);
      expect(expected[0]).to.include(kept.predicate.value);
      const reopened = await openStore(dir);
      expect(allQuads(reopened.store.index)).to.deep.equal(expected);
      await store.close();
      await reopened.store.close();
    });
  });
});
