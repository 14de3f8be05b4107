import { expect } from 'chai';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { ARCHIVE_DIR } from '../src/store/embedded/archive/archive.js';
import { literal, namedNode, quad, quadToNq, type Quad } from '../src/rdf/terms.js';
import { exportDataDirectory } from '../src/store/embedded/export/export.js';
import { API, api } from '../src/rdf/vocab.js';
import type { DurableStore } from '../src/store/embedded/durable-store.js';
import {
  receivedNotificationGraph,
  receivedNotificationQuads,
  type ReceivedNotificationRecord,
} from '../src/store/schema/received-notifications.js';
import { openStore, tempDir } from './support/store-data.js';
import { startTestServer } from './support/server.js';

const SENDERS = ['https://airline.example.com/org', 'https://forwarder.example.com/org'];
const TYPES = [`${API}LOGISTICS_OBJECT_UPDATED`, `${API}LOGISTICS_EVENT_RECEIVED`];
const T0 = Date.UTC(2026, 10, 1);
// Past LMDB's key size once combined: such values are keyed by their hash.
const LONG = `https://publisher.example.com/logistics-objects/${'x'.repeat(2000)}`;

/** Notification n: sender, event type and object cycle, one minute apart; n = 0 has a long @id and object. */
function notification(n: number, key?: string): { record: ReceivedNotificationRecord; triples: Quad[] } {
  const iri = n === 0 ? `${LONG}/notification` : `https://publisher.example.com/notifications/${n}`;
  const object = n === 0 ? LONG : n % 3 === 0 ? undefined : `https://publisher.example.com/logistics-objects/${n % 3}`;
  const record: ReceivedNotificationRecord = {
    iri,
    graph: receivedNotificationGraph(`n${n}`),
    sender: SENDERS[n % 2],
    receivedAt: new Date(T0 + n * 60_000),
    sequence: n + 1,
    ...(key === undefined ? {} : { idempotencyKey: key }),
    eventType: TYPES[Math.floor(n / 2) % 2],
    ...(object === undefined ? {} : { object }),
  };
  const s = namedNode(iri);
  const triples = [
    quad(s, namedNode(api.hasEventType), namedNode(record.eventType)),
    quad(s, namedNode(`${API}hasChangedProperty`), literal(`text "${n}"\nline é 🚚`)),
    ...(object === undefined ? [] : [quad(s, namedNode(api.hasLogisticsObject), namedNode(object))]),
  ];
  return { record, triples };
}

/** Stores notifications as POST /notifications does: their graphs finished in the commit that writes them (or, `legacy`, kept in the hot store as before). */
async function receive(store: DurableStore, ns: number[], legacy = false): Promise<void> {
  for (const n of ns) {
    const { record, triples } = notification(n, n % 4 === 1 ? `key-${n}` : undefined);
    const tx = store.begin({ insert: receivedNotificationQuads(record, triples) });
    if (!legacy) tx.finished.push(record.graph);
    tx.events.push({ kind: 'notification-received', notification: record });
    await store.commit(tx);
  }
}

const hotNotificationGraphs = (store: DurableStore) =>
  store.index.listGraphs().filter((g) => g.startsWith(receivedNotificationGraph('')));
const numbers = (page: ReceivedNotificationRecord[]) => page.map((r) => r.sequence - 1);
const all = Array.from({ length: 24 }, (_, n) => n);

async function expectListed(store: DurableStore): Promise<void> {
  const notifications = store.receivedNotifications;
  expect(await notifications.lastSequence()).to.equal(24);
  const everything = await notifications.list({}, 0, 100);
  expect(everything.total).to.equal(24);
  expect(everything.page.map((r) => r.sequence - 1)).to.deep.equal(all);
  expect(everything.page[5]).to.deep.equal(notification(5, 'key-5').record);
  // Paging: the total is the filter's, the page is in arrival order.
  const page = await notifications.list({ sender: SENDERS[1] }, 3, 4);
  expect(page.total).to.equal(12);
  expect(numbers(page.page)).to.deep.equal([7, 9, 11, 13]);
  expect(numbers((await notifications.list({ eventType: TYPES[1] }, 0, 100)).page)).to.deep.equal(
    all.filter((n) => Math.floor(n / 2) % 2 === 1),
  );
  const object1 = 'https://publisher.example.com/logistics-objects/1';
  expect(numbers((await notifications.list({ object: object1 }, 0, 100)).page)).to.deep.equal(
    all.filter((n) => n % 3 === 1),
  );
  expect(numbers((await notifications.list({ object: LONG }, 0, 100)).page)).to.deep.equal([0]);
  const window = { receivedAfter: new Date(T0 + 3 * 60_000), receivedBefore: new Date(T0 + 10 * 60_000) };
  expect(numbers((await notifications.list(window, 0, 100)).page)).to.deep.equal([3, 4, 5, 6, 7, 8, 9, 10]);
  expect(numbers((await notifications.list({ receivedAfter: new Date(T0 + 20 * 60_000) }, 0, 100)).page)).to.deep.equal(
    [20, 21, 22, 23],
  );
  // Several filters: every one must match.
  const combined = await notifications.list({ ...window, sender: SENDERS[0], object: object1 }, 0, 100);
  expect(combined.total).to.equal(2);
  expect(numbers(combined.page)).to.deep.equal([4, 10]);
  expect(await notifications.list({ sender: 'https://nobody.example.com/org' }, 0, 100)).to.deep.equal({
    total: 0,
    page: [],
  });
  // Duplicates are found by @id and by the sender's Idempotency-Key (not another sender's).
  expect((await notifications.withId(notification(7).record.iri))?.sequence).to.equal(8);
  expect((await notifications.withId(`${LONG}/notification`))?.sequence).to.equal(1);
  expect(await notifications.withId('https://publisher.example.com/notifications/none')).to.equal(undefined);
  expect((await notifications.withKey(SENDERS[1], 'key-5'))?.sequence).to.equal(6);
  expect(await notifications.withKey(SENDERS[0], 'key-5')).to.equal(undefined);
  // The content as received, without the receipt.
  const content = await notifications.triples(everything.page[2]);
  expect(content.map((t) => t.object.value)).to.have.members(notification(2).triples.map((t) => t.object.value));
}

describe('received notifications are kept out of the hot store, in the archive', function () {
  this.timeout(60_000);

  it('never enter Oxigraph; are found by @id and Idempotency-Key and listed by every filter with paging, before and after restarts, rebuilt from the journal, after a snapshot', async () => {
    const { dir, remove } = await tempDir();
    try {
      let { store } = await openStore(dir);
      await receive(store, all.slice(0, 12));
      // Read at once, before the archive's writes reach LMDB; then from LMDB.
      await receive(store, all.slice(12));
      expect(hotNotificationGraphs(store)).to.deep.equal([]);
      expect(store.index.size, 'nothing of them in the hot store').to.equal(0);
      await expectListed(store);
      await store.close();
      ({ store } = await openStore(dir));
      await expectListed(store);
      // As after a crash that lost every archive write: the journal has them all.
      await store.close();
      await rm(join(dir, ARCHIVE_DIR), { recursive: true });
      ({ store } = await openStore(dir));
      await expectListed(store);
      await store.snapshot(); // the journal folded: the archive alone holds them now
      await store.close();
      ({ store } = await openStore(dir));
      await expectListed(store);
      await store.close();
      // `onerecord export` writes each one in its graph, with its receipt.
      const out = join(dir, 'export.nq');
      await exportDataDirectory(dir, out);
      const exported = await readFile(out, 'utf8');
      for (const n of all) {
        const { record, triples } = notification(n, n % 4 === 1 ? `key-${n}` : undefined);
        for (const q of receivedNotificationQuads(record, triples)) expect(exported).to.contain(quadToNq(q));
      }
    } finally {
      await remove();
    }
  });

  it('data of the layout before (one hot graph per notification) moves to the archive at start, once', async () => {
    const { dir, remove } = await tempDir();
    try {
      let { store } = await openStore(dir);
      await receive(store, all, true);
      expect(hotNotificationGraphs(store)).to.have.length(24);
      await store.close();
      let log: string[];
      ({ store, log } = await openStore(dir));
      expect(log).to.include('received notifications: 24 moved out of the hot store to the archive');
      expect(hotNotificationGraphs(store)).to.deep.equal([]);
      expect(store.index.size).to.equal(0);
      await expectListed(store);
      await store.close();
      ({ store, log } = await openStore(dir));
      expect(log.filter((l) => l.startsWith('received notifications'))).to.deep.equal([]);
      await expectListed(store);
      await store.close();
    } finally {
      await remove();
    }
  });

  it('retention removes those received before a time, with their index entries, and never gives an arrival number twice', async () => {
    const { dir, remove } = await tempDir();
    try {
      let { store } = await openStore(dir);
      await receive(store, all);
      const notifications = () => store.receivedNotifications;
      expect(await notifications().removeReceivedBefore(new Date(T0 + 10 * 60_000), 4)).to.equal(4);
      expect(await notifications().removeReceivedBefore(new Date(T0 + 10 * 60_000), 100)).to.equal(6);
      const left = all.slice(10);
      const check = async () => {
        expect(numbers((await notifications().list({}, 0, 100)).page)).to.deep.equal(left);
        expect((await notifications().list({ sender: SENDERS[1] }, 0, 100)).total).to.equal(7);
        expect(
          numbers(
            (await notifications().list({ object: 'https://publisher.example.com/logistics-objects/1' }, 0, 100)).page,
          ),
        ).to.deep.equal(left.filter((n) => n % 3 === 1));
        expect((await notifications().list({ receivedBefore: new Date(T0 + 12 * 60_000) }, 0, 100)).total).to.equal(3);
        expect(await notifications().withId(notification(5).record.iri)).to.equal(undefined);
        expect(await notifications().withKey(SENDERS[1], 'key-5')).to.equal(undefined);
        expect((await notifications().withKey(SENDERS[1], 'key-13'))?.sequence).to.equal(14);
      };
      await check();
      // The journal still holds them until a snapshot folds it: a start puts them back, to be removed again.
      await store.close();
      ({ store } = await openStore(dir));
      expect((await notifications().list({}, 0, 100)).total).to.equal(24);
      expect(await notifications().removeReceivedBefore(new Date(T0 + 10 * 60_000), 100)).to.equal(10);
      await store.snapshot();
      await store.close();
      ({ store } = await openStore(dir));
      await check();
      // All of them gone: the next arrival number is still past every one given.
      expect(await notifications().removeReceivedBefore(new Date(T0 + 100 * 60_000), 100)).to.equal(14);
      await store.close();
      ({ store } = await openStore(dir));
      expect((await notifications().list({}, 0, 100)).total).to.equal(0);
      expect(await notifications().lastSequence()).to.equal(24);
      await store.close();
    } finally {
      await remove();
    }
  });

  it('notifications.retentionDays: a server removes, from its start on, what it received longer ago', async () => {
    const { dir, remove } = await tempDir();
    try {
      const { store } = await openStore(dir);
      await receive(store, all); // received in November 2026's first hour
      await store.close();
      const server = await startTestServer({ notifications: { retentionDays: 1 } }, dir);
      try {
        const fresh = await fetch(`${server.url}/notifications`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${await server.token('other')}`, 'Content-Type': 'application/ld+json' },
          body: JSON.stringify({
            '@context': { api: API },
            '@id': 'https://publisher.example.com/notifications/fresh',
            '@type': 'api:Notification',
            'api:hasEventType': { '@id': 'api:LOGISTICS_OBJECT_CREATED' },
          }),
        });
        expect(fresh.status).to.equal(204);
        let listed: unknown;
        for (let i = 0; i < 100; i++) {
          listed = ((await (await server.request('/internal/notifications')).json()) as Record<string, unknown>)[
            'api:hasItem'
          ];
          if (!Array.isArray(listed)) break;
          await new Promise((r) => setTimeout(r, 50));
        }
        expect(listed).to.deep.include({ '@id': 'https://publisher.example.com/notifications/fresh' });
        expect(await server.running.store.receivedNotifications.lastSequence(), 'arrival numbers go on').to.equal(25);
      } finally {
        await server.close();
      }
    } finally {
      await remove();
    }
  });
});
