import { expect } from 'chai';
import { QueueWindows, type Queue } from '../src/domain/pubsub/delivery-queues.js';
import { SettleCommits } from '../src/domain/pubsub/delivery-settle.js';
import type { SubscriptionIndex } from '../src/domain/pubsub/subscriptions.js';
import { API } from '../src/rdf/vocab.js';
import type { DurableStore } from '../src/store/embedded/durable-store.js';
import { outboxEntryGraph, outboxEntryQuads, type OutboxEntry, type Recipient } from '../src/store/schema/outbox.js';
import { openStore, tempDir } from './support/store-data.js';

const RECIPIENT: Recipient = {
  queue: 'https://subscriber.example.com/org queue',
  subscription: 'https://publisher.example.com/action-requests/s1',
  callback: 'http://127.0.0.1:9/notifications',
};

/** An entry addressed to RECIPIENT by name (no topic: no subscription index is asked). */
const entry = (sequence: number): OutboxEntry => ({
  sequence,
  iri: `https://publisher.example.com/notifications/n${sequence}`,
  queuedAt: new Date(),
  content: {
    eventType: `${API}LOGISTICS_OBJECT_UPDATED`,
    object: 'https://publisher.example.com/logistics-objects/o',
    revision: sequence,
  },
  topics: [],
  addressed: [RECIPIENT],
  recipients: 1,
});

/** Settle commits following a store's commits, and queue windows of 4 over them. */
interface QueueBench {
  settle: SettleCommits;
  windows: QueueWindows;
  /** Stores entry `sequence` as its commit does (the windows are not told). */
  queued(sequence: number): Promise<void>;
}

/** Runs `use` on a fresh QueueBench (`kick`: told when a queue has notifications to send), closed after. */
async function withQueueWindows(use: (bench: QueueBench) => Promise<void>, kick: (q: Queue) => void = () => {}) {
  const { dir, remove } = await tempDir();
  const { store } = await openStore(dir);
  const settle = new SettleCommits(store, {
    lowWater: () => 0,
    recordCap: () => Number.POSITIVE_INFINITY,
    knownEntry: () => undefined,
    serving: () => false,
    backoffMs: () => 1000,
    log: () => {},
  });
  store.committed.subscribe((events) => {
    for (const e of events) settle.onCommitted(e);
  });
  const windows = new QueueWindows(store, {} as SubscriptionIndex, settle, 4, kick);
  const queued = async (sequence: number) => {
    const tx = store.begin({ insert: outboxEntryQuads(entry(sequence)) });
    tx.events.push({ kind: 'notification-queued', entry: entry(sequence), recipients: [RECIPIENT] });
    await store.commit(tx);
  };
  try {
    await use({ settle, windows, queued });
  } finally {
    await settle.stop();
    await store.close();
    await remove();
  }
}

/**
 * Delivers the queue window after window (as Delivery records it), each refilled from the store: the entry numbers
 * sent, in order. The queue is forgotten once empty, and made again for the next entry: taken afresh each call.
 */
async function deliverAll(windows: QueueWindows): Promise<number[]> {
  const sent: number[] = [];
  const [q] = [...windows.all()];
  for (let rounds = 0; q.window.length > 0 && rounds < 10; rounds++) {
    sent.push(...q.window.filter((i) => i.state === 'waiting').map((i) => i.sequence));
    for (const item of q.window) item.state = 'settled';
    q.unsettled = 0;
    windows.advance(q);
    while (q.paging) await new Promise((resolve) => setTimeout(resolve, 5));
  }
  return sent;
}

describe('delivery queue windows', () => {
  it("keeps in memory only the entries a queue's window holds: a dead subscriber's backlog stays in the store and is read back, in order, as the window drains", async () => {
    // Told when a queue has notifications to send: after a refill from the store, which reads asynchronously.
    let kicked: (q: Queue) => void = () => {};
    await withQueueWindows(
      async ({ windows, queued }) => {
        for (let sequence = 1; sequence <= 40; sequence++) {
          await queued(sequence);
          windows.enqueue(entry(sequence), [RECIPIENT]);
        }
        const [q] = [...windows.all()];
        expect(q.window.map((i) => i.sequence)).to.deep.equal([1, 2, 3, 4]);
        expect(q.backlog).to.equal(36);
        const kept = (from: number, to: number) =>
          Array.from({ length: to - from + 1 }, (_, i) => windows.knownEntry(from + i) !== undefined);
        expect(kept(1, 4)).to.deep.equal([true, true, true, true]);
        expect(kept(5, 40).filter(Boolean)).to.have.length(0);

        // The four are delivered (as Delivery records it): the window is filled again from the store.
        for (const item of q.window) item.state = 'settled';
        q.unsettled = 0;
        const refilled = new Promise<void>((resolve) => {
          kicked = (k) => {
            if (k === q && !k.paging) resolve();
          };
        });
        windows.advance(q);
        await refilled;
        expect(q.window.map((i) => i.sequence)).to.deep.equal([5, 6, 7, 8]);
        expect(q.window.map((i) => i.content?.revision)).to.deep.equal([5, 6, 7, 8]);
        expect(q.backlog).to.equal(32);
      },
      (q) => kicked(q),
    );
  });

  it("a late entry whose number a queue's backlog covers is read with that backlog, once: every entry of the backlog is read from the store, the last one too", async () => {
    await withQueueWindows(async ({ windows, queued }) => {
      // Entry 6 is written last (another process's commit): 1-4 fill the window, 5 and 7-10 wait in the store.
      for (const sequence of [1, 2, 3, 4, 5, 7, 8, 9, 10]) {
        await queued(sequence);
        windows.enqueue(entry(sequence), [RECIPIENT]);
      }
      await queued(6);
      windows.enqueue(entry(6), [RECIPIENT], true);
      const [q] = [...windows.all()];
      const sent = await deliverAll(windows);
      expect(sent.sort((a, b) => a - b)).to.deep.equal([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
      expect(q.backlog).to.equal(0);
    });
  });

  it("a late entry read with a queue's backlog before it joins the queue: every entry of the backlog is still read, and the next entry goes after them", async () => {
    await withQueueWindows(async ({ windows, queued }) => {
      // Entry 6 is stored late (another process's commit) and joins its queue later still (Delivery holds arrivals
      // while it answers requests): the backlog (5, 7-10) is read from the store meanwhile, 6 with it.
      for (const sequence of [1, 2, 3, 4, 5, 7, 8, 9, 10]) {
        await queued(sequence);
        windows.enqueue(entry(sequence), [RECIPIENT]);
      }
      await queued(6);
      const sent = await deliverAll(windows);
      windows.enqueue(entry(6), [RECIPIENT], true);
      await queued(11);
      windows.enqueue(entry(11), [RECIPIENT]);
      sent.push(...(await deliverAll(windows)));
      // 6 twice (read with the backlog, then joined as a late entry), the rest once, 10 before 11.
      expect(sent).to.deep.equal([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 6, 11]);
    });
  });

  it('a late entry behind notifications being sent holds the queue position and the low water mark below it until it is settled', async () => {
    await withQueueWindows(async ({ settle, windows }) => {
      for (const sequence of [1, 3, 4]) windows.enqueue(entry(sequence), [RECIPIENT]);
      const [q] = [...windows.all()];
      // 1 and 3 are being sent when 2 comes late: it goes in after them, so the window is [1, 3, 2, 4].
      q.window[0].state = 'sending';
      q.window[1].state = 'sending';
      windows.enqueue(entry(2), [RECIPIENT], true);
      expect(q.window.map((i) => i.sequence)).to.deep.equal([1, 3, 2, 4]);
      q.window[0].state = 'settled';
      q.unsettled -= 1;
      windows.advance(q);
      // Entry 2 is not settled: a restart from the position must send it, and it must stay in the store.
      expect(settle.position(RECIPIENT.queue)).to.equal(1);
      expect(windows.lowWater(100)).to.equal(1);
    });
  });

  it('queue positions are recorded, and entries removed, only up to recordCap (below a number still awaited); once it lifts, up to where the queues stand', async () => {
    const { dir, remove } = await tempDir();
    const { store } = await openStore(dir);
    let cap = 30;
    const settle = new SettleCommits(store, {
      lowWater: () => 10,
      recordCap: () => cap,
      knownEntry: () => undefined,
      serving: () => false,
      backoffMs: () => 1000,
      log: () => {},
    });
    const recorded: string[] = [];
    store.committed.subscribe((events) =>
      events.forEach((e) => {
        settle.onCommitted(e);
        if (e.kind === 'outbox-advanced') recorded.push(`position ${e.through}`);
        if (e.kind === 'outbox-compacted') recorded.push(`removed through ${e.through}`);
      }),
    );
    const settled = async (count: number) => {
      settle.schedule(1);
      for (const started = Date.now(); recorded.length < count && Date.now() - started < 5_000; )
        await new Promise((resolve) => setTimeout(resolve, 10));
    };
    try {
      for (let sequence = 1; sequence <= 40; sequence++) {
        const tx = store.begin({ insert: outboxEntryQuads(entry(sequence)) });
        tx.events.push({ kind: 'notification-queued', entry: entry(sequence), recipients: [RECIPIENT] });
        await store.commit(tx);
      }
      // The queue delivered all 40; another queue still needs entry 11 (lowWater 10); 31 is awaited.
      settle.moveTo(RECIPIENT.queue, 40);
      await settled(2);
      expect(recorded.sort()).to.deep.equal(['position 30', 'removed through 10']);
      cap = Number.POSITIVE_INFINITY;
      await settled(3);
      expect(recorded[2]).to.equal('position 40');
    } finally {
      await settle.stop();
      await store.close();
      await remove();
    }
  });
  it("entries every queue is past leave nothing in the hot store, their graphs' names included, also after a restart", async () => {
    const { dir, remove } = await tempDir();
    let { store } = await openStore(dir);
    // Entries read already (odd numbers) are deleted quad by quad; the others as whole graphs.
    const entries = Array.from({ length: 10 }, (_, i) => entry(i + 1));
    const settle = new SettleCommits(store, {
      lowWater: () => 10,
      recordCap: () => Number.POSITIVE_INFINITY,
      knownEntry: (sequence) => (sequence % 2 === 1 ? entries[sequence - 1] : undefined),
      serving: () => false,
      backoffMs: () => 1000,
      log: () => {},
    });
    let removed = false;
    store.committed.subscribe((events) =>
      events.forEach((e) => {
        settle.onCommitted(e);
        if (e.kind === 'outbox-compacted' && e.through === 10) removed = true;
      }),
    );
    const entryGraphs = (s: DurableStore) =>
      s.index.listGraphs().filter((g) => g.startsWith(outboxEntryGraph(0).slice(0, -1)));
    try {
      for (const queued of entries) {
        const tx = store.begin({ insert: outboxEntryQuads(queued) });
        tx.events.push({ kind: 'notification-queued', entry: queued, recipients: [RECIPIENT] });
        await store.commit(tx);
      }
      expect(entryGraphs(store)).to.have.length(10);
      // In the snapshot a restart loads, then removed by the journal after it.
      await store.snapshot();
      settle.moveTo(RECIPIENT.queue, 10);
      settle.schedule(1);
      for (const started = Date.now(); !removed && Date.now() - started < 5_000; )
        await new Promise((resolve) => setTimeout(resolve, 10));
      expect(removed).to.equal(true);
      expect(entryGraphs(store)).to.deep.equal([]);
      await settle.stop();
      await store.close();
      // Started again: the snapshot holds the entries, the journal replayed after it removes them.
      ({ store } = await openStore(dir));
      expect(entryGraphs(store)).to.deep.equal([]);
    } finally {
      await settle.stop();
      await store.close();
      await remove();
    }
  });
});
