import { expect } from 'chai';
import { symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { listSegments, segmentName } from '../src/store/embedded/journal/journal.js';
import { revisionGraph, revisionQuads, type RevisionRecord } from '../src/store/schema/revisions.js';
import type { DomainEvent } from '../src/store/transaction.js';
import { receivedNotificationGraph } from '../src/store/schema/received-notifications.js';
import { namedNode, quad, type Quad } from '../src/rdf/terms.js';
import { STORE, store as bookkeeping } from '../src/rdf/vocab.js';
import { graphQuads, openStore, tempDir } from './support/store-data.js';

const revision = (n: number): RevisionRecord => ({
  object: `urn:o:${n}`,
  number: 1,
  graph: revisionGraph(`urn:o:${n}`, 1),
  createdAt: new Date(n),
  createdBy: 'urn:agent',
  mostSpecificType: 'urn:type',
});
const created = (n: number): DomainEvent => ({ kind: 'object-created', revision: revision(n) });

describe('the commit site and the after-commit stream', () => {
  it('publishes each transaction once, in commit order, after its quads are durable and applied; claims end with the commit', async () => {
    const { dir, remove } = await tempDir();
    const { store } = await openStore(dir);
    try {
      const seen: { events: readonly DomainEvent[]; quads: number; claimed: boolean }[] = [];
      store.committed.subscribe((events) =>
        seen.push({ events, quads: store.index.size, claimed: store.claims.isHeld('key 1') }),
      );
      const data: { lines: string[]; events: readonly DomainEvent[] }[] = [];
      store.committed.subscribeData((record, events) =>
        data.push({
          lines: Buffer.from(record.insert)
            .toString('utf8')
            .split(/(?<=\n)/)
            .filter(Boolean),
          events,
        }),
      );
      const transactions = [1, 2, 3].map((n) => {
        const tx = store.begin({ insert: graphQuads(`g${n}`, 2) });
        tx.events.push(created(n));
        expect(tx.claim(`key ${n}`)).to.equal(true);
        return tx;
      });
      expect(store.begin().claim('key 1')).to.equal(false);
      await Promise.all(transactions.map((tx) => store.commit(tx)));
      expect(seen.map((s) => s.events)).to.deep.equal([[created(1)], [created(2)], [created(3)]]);
      expect(seen.map((s) => s.quads)).to.deep.equal([2, 4, 6]);
      expect(seen[0].claimed, 'claims are released right after the events are published').to.equal(true);
      // Consumers of the data (the SPARQL replica) get each transaction's journal record with its events, in the same order.
      expect(data.map((d) => d.events)).to.deep.equal(seen.map((s) => s.events));
      expect(data.map((d) => d.lines.length)).to.deep.equal([2, 2, 2]);
      expect(data[1].lines.join('')).to.contain('g2');
      for (const n of [1, 2, 3]) expect(store.claims.isHeld(`key ${n}`)).to.equal(false);
    } finally {
      await store.close();
      await remove();
    }
  });

  it("hands data consumers (the SPARQL replica) only the commits that write a graph a view may show, not the store's own bookkeeping alone", async () => {
    const { dir, remove } = await tempDir();
    const { store } = await openStore(dir);
    try {
      const data: string[] = [];
      store.committed.subscribeData((record) => data.push(Buffer.from(record.insert).toString('utf8')));
      let events = 0;
      store.committed.subscribe(() => events++);
      const inGraph = (graph: string) =>
        graphQuads('x', 2).map((q) => quad(q.subject, q.predicate, q.object, namedNode(graph)));
      const commit = async (quads: Quad[]) => {
        const tx = store.begin({ insert: quads });
        tx.events.push(created(data.length));
        await store.commit(tx);
      };
      // A received notification and a delivery queue's progress: no view shows them.
      await commit(inGraph(receivedNotificationGraph('n1')));
      await commit(inGraph(`${STORE}outbox-positions`));
      expect(data, 'bookkeeping alone is not sent').to.deep.equal([]);
      await commit([...inGraph(`${STORE}outbox-positions`), ...inGraph('https://example.com/logistics-objects/1')]);
      await commit(inGraph(bookkeeping.metaGraph));
      expect(data).to.have.length(2);
      expect(events, 'every commit is still published to the domain').to.equal(4);
    } finally {
      await store.close();
      await remove();
    }
  });

  it('a commit that cannot be made durable publishes nothing, applies nothing and releases its claims', async () => {
    const { dir, remove } = await tempDir();
    const { store } = await openStore(dir);
    try {
      const seen: DomainEvent[] = [];
      store.committed.subscribe((events) => seen.push(...events));
      await symlink('/dev/full', join(dir, segmentName(Math.max(...(await listSegments(dir))) + 1)));
      await store.snapshot(); // rotates the journal onto the full device
      const tx = store.begin({ insert: graphQuads('lost', 2) });
      tx.events.push(created(1));
      tx.claim('key');
      let failed = false;
      await store.commit(tx).catch(() => (failed = true));
      expect(failed).to.equal(true);
      expect(seen).to.deep.equal([]);
      expect(store.index.size).to.equal(0);
      expect(store.claims.isHeld('key')).to.equal(false);
    } finally {
      // Its journal file (on the full device) is closed with it; the close may report the failed write.
      await store.close().catch(() => undefined);
      await remove();
    }
  });

  it('at start, what the store holds is published as the events that wrote it', async () => {
    const { dir, remove } = await tempDir();
    try {
      const first = await openStore(dir);
      const tx = first.store.begin();
      tx.insert.push(...revisionQuads(revision(7))); // the revision's metadata, as LogisticsObjects writes it
      tx.events.push(created(7));
      await first.store.commit(tx);
      await first.store.close();
      const second = await openStore(dir);
      const seen: DomainEvent[] = [];
      second.store.committed.subscribe((events) => seen.push(...events));
      let data = 0;
      second.store.committed.subscribeData(() => data++);
      await second.store.publishStored();
      expect(seen).to.deep.equal([created(7)]);
      expect(data, 'no data: the replica copies the store instead').to.equal(0);
      await second.store.close();
    } finally {
      await remove();
    }
  });
});
