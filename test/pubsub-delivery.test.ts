import { expect } from 'chai';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import type { ConfigOverrides } from '../src/config.js';
import { add, change, createObject, piece, str, submit } from './support/changes.js';
import { eventJson } from './support/events.js';
import { startListener, type LoopbackListener } from './support/loopback.js';
import { holderAt, holderOf, startPeers } from './support/peers.js';
import {
  API,
  forwardNotification,
  postSubscription,
  startGateway,
  receivedNotifications,
  subscribe,
  subscription,
  waitForNotifications,
  type Json,
} from './support/pubsub.js';
import { ServerProcess } from './support/server-process.js';
import { readOutboxEntries, readOutboxPositions, readParkedNotifications } from '../src/store/schema/outbox.js';
import { freePort, startTestServer, type TestServer } from './support/server.js';

const q = (params: Record<string, string>) => `?${new URLSearchParams(params)}`;
const FAST_RETRIES: ConfigOverrides = { delivery: { initialBackoffMs: 50, maxBackoffMs: 200 } };
const revisionOf = (n: Json) => n['api:hasRevision'] as number;

/** Changes `object` `count` times in a row (shippingMarks added), from revision `from`. */
async function changeRepeatedly(publisher: TestServer, object: string, from: number, count: number): Promise<void> {
  for (let i = 0; i < count; i++)
    await submit(publisher, object, change(object, from + i, [add(object, 'shippingMarks', str(`mark ${from + i}`))]));
}

async function outbox(server: TestServer, what: 'queues' | 'dead-letters'): Promise<Json> {
  const res = await server.request(`/internal/outbox/${what}`);
  expect(res.status, await res.clone().text()).to.equal(200);
  return (await res.json()) as Json;
}

describe('guaranteed delivery between servers', function () {
  this.timeout(90_000);

  describe('subscriber down, then up', () => {
    let subscriber: TestServer;
    let publisher: TestServer;
    before(async () => {
      [subscriber, publisher] = await startPeers(2, (i, urls) =>
        i === 1 ? { internalAgents: [holderAt(urls[0])], ...FAST_RETRIES } : {},
      );
    });
    after(async () => {
      await Promise.all([subscriber?.close(), publisher?.close()]);
    });

    it('keeps the notifications while the subscriber is stopped and delivers them in order once it is back; the writes did not wait', async () => {
      const object = await createObject(publisher, piece());
      await subscribe(subscriber, publisher, subscription(subscriber, object));
      await subscriber.stop();
      const started = Date.now();
      await changeRepeatedly(publisher, object, 1, 6);
      expect(Date.now() - started).to.be.lessThan(5000);
      const { queues } = (await outbox(publisher, 'queues')) as { queues: Json[] };
      expect(queues).to.have.length(1);
      expect(queues[0].pending).to.equal(6);
      expect(queues[0].lastError).to.be.a('string');
      await subscriber.restart();
      const got = await waitForNotifications(subscriber, 6, q({ 'event-type': 'LOGISTICS_OBJECT_UPDATED' }));
      expect(got.map(revisionOf)).to.deep.equal([2, 3, 4, 5, 6, 7]);
      for (let i = 0; i < 50 && ((await outbox(publisher, 'queues')).queues as Json[]).length > 0; i++)
        await new Promise((r) => setTimeout(r, 50));
      expect((await outbox(publisher, 'queues')).queues).to.deep.equal([]);
    });
  });

  describe('a backlog longer than the queue window', () => {
    let subscriber: TestServer;
    let publisher: TestServer;
    before(async () => {
      [subscriber, publisher] = await startPeers(2, (i, urls) =>
        i === 1 ? { internalAgents: [holderAt(urls[0])], delivery: { ...FAST_RETRIES.delivery, queueWindow: 4 } } : {},
      );
    });
    after(async () => {
      await Promise.all([subscriber?.close(), publisher?.close()]);
    });

    it('keeps only the window in memory and pages the rest from the store: every notification arrives, in order', async () => {
      const object = await createObject(publisher, piece());
      await subscribe(subscriber, publisher, subscription(subscriber, object));
      await subscriber.stop();
      // More notifications than one outbox page spans, so paging crosses pages.
      const ids = Array.from({ length: 300 }, (_, i) => `${object}/logistics-events/e${String(i).padStart(3, '0')}`);
      const bulk = await publisher.request('/logistics-events', {
        method: 'POST',
        headers: { 'Content-Type': 'application/ld+json' },
        body: JSON.stringify(ids.map((id) => ({ ...eventJson(), '@id': id, 'cargo:eventFor': { '@id': object } }))),
      });
      expect(bulk.status, await bulk.clone().text()).to.equal(207);
      const { queues } = (await outbox(publisher, 'queues')) as { queues: Json[] };
      expect(queues).to.have.length(1);
      expect(queues[0].pending).to.equal(300);
      expect(queues[0].inMemory).to.be.at.most(4);
      await subscriber.restart();
      const got = await waitForNotifications(
        subscriber,
        300,
        q({ 'event-type': 'LOGISTICS_EVENT_RECEIVED', limit: '1000' }),
        60_000,
      );
      expect(got.map((n) => (n['api:hasLogisticsEvent'] as Json)['@id'])).to.deep.equal(ids);
      for (let i = 0; i < 50 && ((await outbox(publisher, 'queues')).queues as Json[]).length > 0; i++)
        await new Promise((r) => setTimeout(r, 50));
      expect((await outbox(publisher, 'queues')).queues).to.deep.equal([]);
    });
  });

  describe('one outbox entry per write', () => {
    let subscriber: TestServer;
    let publisher: TestServer;
    before(async () => {
      [subscriber, publisher] = await startPeers(2, (i, urls) =>
        i === 1 ? { internalAgents: [holderAt(urls[0])], decisionPolicy: 'all', ...FAST_RETRIES } : {},
      );
    });
    after(async () => {
      await Promise.all([subscriber?.close(), publisher?.close()]);
    });

    it('whatever the number of subscriptions; one started after the write does not get it; the entry leaves the store once every queue is past it', async () => {
      const object = await createObject(publisher, piece());
      // Five subscriptions of the same subscriber to the same object: one queue, a notification for each.
      for (let i = 0; i < 5; i++) await subscribe(subscriber, publisher, subscription(subscriber, object));
      await subscriber.stop();
      await changeRepeatedly(publisher, object, 1, 1);
      const store = publisher.running.store;
      expect((await readOutboxEntries(store)).map((e) => e.recipients)).to.deep.equal([5]);
      const late = await subscribe(subscriber, publisher, subscription(subscriber, object));
      const { queues } = (await outbox(publisher, 'queues')) as { queues: Json[] };
      expect(queues.map((q) => q.pending)).to.deep.equal([5]);
      await subscriber.restart();
      const got = await waitForNotifications(subscriber, 5, q({ 'event-type': 'LOGISTICS_OBJECT_UPDATED' }));
      expect(new Set(got.map((n) => n['@id'])).size).to.equal(5);
      for (let i = 0; i < 50 && (await readOutboxEntries(store)).length > 0; i++)
        await new Promise((r) => setTimeout(r, 50));
      expect(await readOutboxEntries(store)).to.deep.equal([]);
      const positions = await readOutboxPositions(store);
      // The queue is past every entry: the entries removed say where it stands, it has no position of its own.
      expect(positions.queues).to.deep.equal([]);
      expect(positions.compactedThrough).to.be.at.least(1);
      expect(positions.subscriptions.find((s) => s.subscription === late)?.after).to.be.at.least(
        positions.compactedThrough,
      );
      // The late subscription gets the next change, and only that.
      await changeRepeatedly(publisher, object, 2, 1);
      await waitForNotifications(subscriber, 11, q({ 'event-type': 'LOGISTICS_OBJECT_UPDATED' }));
      await new Promise((r) => setTimeout(r, 300));
      expect(await receivedNotifications(subscriber, q({ 'event-type': 'LOGISTICS_OBJECT_UPDATED' }))).to.have.length(
        11,
      );
    });
  });

  describe('a queue that keeps up while another lags', () => {
    let up: TestServer;
    let down: TestServer;
    let publisher: TestServer;
    before(async () => {
      [up, down, publisher] = await startPeers(3, (i, urls) =>
        i === 2 ? { internalAgents: [holderAt(urls[0]), holderAt(urls[1])], ...FAST_RETRIES } : {},
      );
    });
    after(async () => {
      await Promise.all([up?.close(), down?.close(), publisher?.close()]);
    });

    it('writes no position per entry close to the entries removed; stopping records it, so a restart sends nothing again', async () => {
      const object = await createObject(publisher, piece());
      await subscribe(up, publisher, subscription(up, object));
      await subscribe(down, publisher, subscription(down, object));
      await down.stop();
      await changeRepeatedly(publisher, object, 1, 3);
      await waitForNotifications(up, 3, q({ 'event-type': 'LOGISTICS_OBJECT_UPDATED' }));
      const upQueue = (queue: string) => queue.startsWith(holderOf(up));
      // The lagging queue keeps every entry; the one that keeps up is 3 entries past them, within the slack.
      await new Promise((r) => setTimeout(r, 300));
      expect((await readOutboxPositions(publisher.running.store)).queues.filter((p) => upQueue(p.queue))).to.deep.equal(
        [],
      );
      const last = (await readOutboxEntries(publisher.running.store)).find((e) => e.content.revision === 4);
      expect(last).to.not.equal(undefined);
      await publisher.stop();
      await publisher.restart();
      // Stopping wrote where it stands: after the restart its queue holds nothing it had.
      expect(
        (await readOutboxPositions(publisher.running.store)).queues
          .filter((p) => upQueue(p.queue))
          .map((p) => p.through),
      ).to.deep.equal([last!.sequence]);
      const upQueues = ((await outbox(publisher, 'queues')).queues as Json[]).filter((queue) =>
        upQueue(queue.queue as string),
      );
      expect(upQueues).to.deep.equal([]);
      await changeRepeatedly(publisher, object, 4, 1);
      const got = await waitForNotifications(up, 4, q({ 'event-type': 'LOGISTICS_OBJECT_UPDATED' }));
      expect(got.map(revisionOf)).to.deep.equal([2, 3, 4, 5]);
    });
  });

  describe('a dead letter while another queue lags', () => {
    let gone: TestServer;
    let down: TestServer;
    let publisher: TestServer;
    let gateway: LoopbackListener;
    before(async () => {
      gateway = await startGateway(
        () => 410,
        () => gone.url,
      );
      [gone, down, publisher] = await startPeers(3, (i, urls) =>
        i === 2
          ? {
              internalAgents: [holderAt(urls[0]), holderAt(urls[1])],
              delivery: {
                ...FAST_RETRIES.delivery,
                callbacks: [{ organization: holderAt(urls[0]), url: `${gateway.url}/notifications` }],
              },
            }
          : {},
      );
    });
    after(async () => {
      await Promise.all([gone?.close(), down?.close(), publisher?.close(), gateway?.close()]);
    });

    it('is written with its queue position past it, also within the slack: after a crash it is not sent again', async () => {
      const object = await createObject(publisher, piece());
      await subscribe(gone, publisher, subscription(gone, object));
      await subscribe(down, publisher, subscription(down, object));
      await down.stop();
      await changeRepeatedly(publisher, object, 1, 1);
      const store = publisher.running.store;
      for (let i = 0; i < 100 && (await readParkedNotifications(store, { dead: true })).length === 0; i++)
        await new Promise((r) => setTimeout(r, 50));
      const [dead] = await readParkedNotifications(store, { dead: true });
      expect(dead.notification.queue.startsWith(holderOf(gone))).to.equal(true);
      const positions = await readOutboxPositions(store);
      // The lagging queue holds the entry in the store; the dead-lettered queue stands past it by a position of its own.
      expect(positions.compactedThrough).to.be.lessThan(dead.notification.sequence);
      expect(positions.queues.find((p) => p.queue === dead.notification.queue)?.through).to.be.at.least(
        dead.notification.sequence,
      );
    });
  });

  describe('a failed send with notifications pipelined behind it', () => {
    let subscriber: TestServer;
    let publisher: TestServer;
    let gateway: LoopbackListener;
    /** Each notification the subscriber's endpoint handled, in order: its revision and what it did with it. */
    const handled: string[] = [];
    let down = true;
    let failOnce: number | undefined;
    before(async () => {
      // The subscriber's endpoint: handles the requests of a connection one after the other; a
      // failed answer closes the connection, and what was pipelined behind it is not handled
      // (RFC 9112, 9.6), so the publisher must send it again.
      const closing = new WeakSet<Socket>();
      const last = new WeakMap<Socket, Promise<void>>();
      gateway = await startListener((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        const body = new Promise<Buffer>((resolve) => req.on('end', () => resolve(Buffer.concat(chunks))));
        const socket = req.socket;
        const done = (last.get(socket) ?? Promise.resolve()).then(async () => {
          if (closing.has(socket)) return void socket.destroy();
          const content = await body;
          const revision = (JSON.parse(content.toString()) as Json)['api:hasRevision'] as number;
          const refuse = (headers: Record<string, string>) => {
            closing.add(socket);
            handled.push(`${revision} refused`);
            res.writeHead(503, { Connection: 'close', ...headers }).end();
          };
          if (down) return refuse({});
          if (revision === failOnce) {
            failOnce = undefined;
            return refuse({ 'Retry-After': '1' });
          }
          handled.push(`${revision} stored`);
          await forwardNotification(subscriber.url, req, content, res);
        });
        last.set(socket, done);
      });
      [subscriber, publisher] = await startPeers(2, (i, urls) =>
        i === 1
          ? {
              internalAgents: [holderAt(urls[0])],
              delivery: {
                ...FAST_RETRIES.delivery,
                callbacks: [{ organization: holderAt(urls[0]), url: `${gateway.url}/notifications` }],
              },
            }
          : {},
      );
    });
    after(async () => {
      await Promise.all([subscriber?.close(), publisher?.close(), gateway?.close()]);
    });

    it('sends what was in flight behind it again after its retry: the subscriber stores every notification once, in order', async () => {
      const object = await createObject(publisher, piece());
      await subscribe(subscriber, publisher, subscription(subscriber, object));
      // A backlog first, so that once the subscriber is back its notifications go pipelined, several at once.
      await changeRepeatedly(publisher, object, 1, 10);
      failOnce = 4;
      down = false;
      const got = await waitForNotifications(subscriber, 10, q({ 'logistics-object': object }));
      expect(handled).to.include('4 refused');
      expect(got.map(revisionOf)).to.deep.equal([2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
      expect(new Set(got.map((n) => n['@id'])).size).to.equal(10);
      // The last copy of each the endpoint took came in queue order too.
      const stored = handled.filter((h) => h.endsWith('stored')).map((h) => Number(h.split(' ')[0]));
      const lastCopies = [...new Set(stored.reverse())].reverse();
      expect(lastCopies).to.deep.equal([2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    });
  });

  describe('publisher SIGKILLed with notifications pending', () => {
    let subscriber: TestServer;
    let publisher: ServerProcess;
    let dataDir: string;
    let config: ConfigOverrides;
    let port: number;
    before(async () => {
      port = await freePort();
      const subscriberPort = await freePort();
      const publisherUrl = `http://127.0.0.1:${port}`;
      subscriber = await startTestServer({
        port: subscriberPort,
        baseUrl: `http://127.0.0.1:${subscriberPort}`,
        outbound: { allowPrivateAddresses: true },
        trustedIssuers: [{ issuer: `${publisherUrl}/idp`, jwksUrl: `${publisherUrl}/idp/.well-known/jwks.json` }],
      });
      dataDir = await mkdtemp(join(tmpdir(), 'onerecord-publisher-'));
      config = {
        ...FAST_RETRIES,
        internalAgents: [holderOf(subscriber)],
        outbound: { allowPrivateAddresses: true },
        trustedIssuers: [{ issuer: `${subscriber.url}/idp`, jwksUrl: `${subscriber.url}/idp/.well-known/jwks.json` }],
      };
      publisher = new ServerProcess({ dataDir, port, config });
      await publisher.ready;
    });
    after(async () => {
      await publisher?.stop('SIGTERM');
      await subscriber?.close();
      await rm(dataDir, { recursive: true, force: true });
    });

    it('delivers them after its restart, in order, each stored once by the subscriber', async () => {
      const created = await publisher.request('/logistics-objects', {
        method: 'POST',
        headers: { 'Content-Type': 'application/ld+json' },
        body: JSON.stringify(piece()),
      });
      const object = created.headers.get('location')!;
      const asPublisher = {
        request: (path: string, init?: RequestInit) => publisher.request(path, init),
      } as unknown as TestServer;
      const res = await postSubscription(
        subscriber,
        { url: `http://127.0.0.1:${port}` } as TestServer,
        subscription(subscriber, object),
      );
      expect(res.status, await res.text()).to.equal(201);
      await subscriber.stop();
      await changeRepeatedly(asPublisher, object, 1, 4);
      await publisher.stop('SIGKILL');
      await subscriber.restart();
      publisher = new ServerProcess({ dataDir, port, config });
      await publisher.ready;
      const got = await waitForNotifications(subscriber, 4, q({ 'event-type': 'LOGISTICS_OBJECT_UPDATED' }));
      expect(got.map(revisionOf)).to.deep.equal([2, 3, 4, 5]);
      expect(new Set(got.map((n) => n['@id'])).size).to.equal(4);
    });
  });

  describe('dead letters', () => {
    let subscriber: TestServer;
    let publisher: TestServer;
    let gateway: LoopbackListener;
    /** What the subscriber's notification endpoint answers: a fixed status, or the real subscriber's answer. */
    let answer: number | 'forward' = 410;
    before(async () => {
      gateway = await startGateway(
        () => answer,
        () => subscriber.url,
      );
      [subscriber, publisher] = await startPeers(2, (i, urls) =>
        i === 1
          ? {
              internalAgents: [holderAt(urls[0])],
              delivery: {
                initialBackoffMs: 50,
                maxBackoffMs: 100,
                retryWindowMs: 600,
                queueWindow: 4,
                callbacks: [{ organization: holderAt(urls[0]), url: `${gateway.url}/notifications` }],
              },
            }
          : {},
      );
    });
    after(async () => {
      await Promise.all([subscriber?.close(), publisher?.close(), gateway?.close()]);
    });

    const waitForDeadLetters = async (count: number): Promise<Json[]> => {
      for (let i = 0; i < 100; i++) {
        const dead = (await outbox(publisher, 'dead-letters')).deadLetters as Json[];
        if (dead.length >= count) return dead;
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error(`expected ${count} dead letters`);
    };

    it('410 Gone: the notification is a dead letter and the subscription ends (revoked, no further notifications)', async () => {
      answer = 410;
      const object = await createObject(publisher, piece());
      const request = await subscribe(subscriber, publisher, subscription(subscriber, object));
      await changeRepeatedly(publisher, object, 1, 1);
      const [dead] = await waitForDeadLetters(1);
      expect(dead.reason).to.match(/410/);
      expect(dead.subscription).to.equal(request);
      for (let i = 0; i < 50; i++) {
        const status = ((await (await publisher.request(request)).json()) as Json)['api:hasRequestStatus'] as Json;
        if (status['@id'] === `${API}REQUEST_REVOKED`) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      const read = (await (await publisher.request(request)).json()) as Json;
      expect((read['api:hasRequestStatus'] as Json)['@id']).to.equal(`${API}REQUEST_REVOKED`);
      answer = 'forward';
      await changeRepeatedly(publisher, object, 2, 1);
      await new Promise((r) => setTimeout(r, 300));
      expect(await receivedNotifications(subscriber, q({ 'logistics-object': object }))).to.have.length(0);
    });

    it('a subscriber failing past the retry window ends in the dead letters; replay delivers them in order', async () => {
      answer = 503;
      const object = await createObject(publisher, piece());
      await subscribe(subscriber, publisher, subscription(subscriber, object));
      await changeRepeatedly(publisher, object, 1, 2);
      const dead = await waitForDeadLetters(3);
      const mine = dead.filter((d) => d.object === object);
      expect(mine).to.have.length(2);
      for (const d of mine) expect(d.reason).to.match(/retry window.*503/);
      answer = 'forward';
      const res = await publisher.request(
        `/internal/outbox/dead-letters/replay?${mine.map((d) => `notification=${encodeURIComponent(d.notification as string)}`).join('&')}`,
        { method: 'POST' },
      );
      expect(((await res.json()) as Json).replayed).to.equal(2);
      const got = await waitForNotifications(subscriber, 2, q({ 'logistics-object': object }));
      expect(got.map(revisionOf)).to.deep.equal([2, 3]);
      expect(
        ((await outbox(publisher, 'dead-letters')).deadLetters as Json[]).filter((d) => d.object === object),
      ).to.deep.equal([]);
      // Delivered again, they leave the store.
      const parked = async () =>
        (await readParkedNotifications(publisher.running.store)).filter((p) => p.notification.object === object);
      for (let i = 0; i < 50 && (await parked()).length > 0; i++) await new Promise((r) => setTimeout(r, 50));
      expect(await parked()).to.deep.equal([]);
    });

    it('replayed dead letters beyond the queue window stay in the store until the window drains; all are delivered, in order', async () => {
      answer = 503;
      const object = await createObject(publisher, piece());
      await subscribe(subscriber, publisher, subscription(subscriber, object));
      await changeRepeatedly(publisher, object, 1, 10);
      for (
        let i = 0;
        i < 100 &&
        ((await outbox(publisher, 'dead-letters')).deadLetters as Json[]).filter((d) => d.object === object).length <
          10;
        i++
      )
        await new Promise((r) => setTimeout(r, 50));
      const res = await publisher.request('/internal/outbox/dead-letters/replay', { method: 'POST' });
      expect(((await res.json()) as Json).replayed).to.be.at.least(10);
      const mine = ((await outbox(publisher, 'queues')).queues as Json[]).find((view) =>
        (view.queue as string).endsWith(object),
      )!;
      expect(mine.pending).to.equal(10);
      expect(mine.inMemory).to.equal(4);
      answer = 'forward';
      const got = await waitForNotifications(subscriber, 10, q({ 'logistics-object': object }));
      expect(got.map(revisionOf)).to.deep.equal([2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
      const parked = async () =>
        (await readParkedNotifications(publisher.running.store)).filter((p) => p.notification.object === object);
      for (let i = 0; i < 50 && (await parked()).length > 0; i++) await new Promise((r) => setTimeout(r, 50));
      expect(await parked()).to.deep.equal([]);
    });
  });

  describe('outbound safety', () => {
    let subscriber: TestServer;
    let publisher: TestServer;
    before(async () => {
      [subscriber, publisher] = await startPeers(2, (i) =>
        i === 1 ? { outbound: { allowPrivateAddresses: false } } : {},
      );
    });
    after(async () => {
      await Promise.all([subscriber?.close(), publisher?.close()]);
    });

    it('a subscriber whose host resolves to a private address makes the SubscriptionRequest fail with a clear error', async () => {
      const object = await createObject(publisher, piece());
      const local = subscriber.url.replace('127.0.0.1', 'localhost');
      const body = subscription(subscriber, object, {
        'api:hasSubscriber': { '@id': `${local}/logistics-objects/data-holder` },
      });
      const res = await publisher.request('/subscriptions', {
        method: 'POST',
        headers: { 'Content-Type': 'application/ld+json' },
        body: JSON.stringify(body),
      });
      expect(res.status, await res.clone().text()).to.equal(201);
      const read = (await (await publisher.request(res.headers.get('location')!)).json()) as Json;
      expect((read['api:hasRequestStatus'] as Json)['@id']).to.equal(`${API}REQUEST_FAILED`);
      expect(JSON.stringify(read['api:hasError'])).to.match(/localhost resolves to .*not called/);
    });

    it('a subscriber hosted on the server itself (its base URL on localhost) gets its notifications; other loopback origins stay refused', async () => {
      const port = await freePort();
      const self = await startTestServer({
        port,
        baseUrl: `http://localhost:${port}`,
        outbound: { allowPrivateAddresses: false },
      });
      try {
        const object = await createObject(self, piece());
        const post = async (subscriber: string) => {
          const body = subscription(self, object, { 'api:hasSubscriber': { '@id': subscriber } });
          const res = await self.request('/subscriptions', {
            method: 'POST',
            headers: { 'Content-Type': 'application/ld+json' },
            body: JSON.stringify(body),
          });
          expect(res.status, await res.clone().text()).to.equal(201);
          return (await (await self.request(res.headers.get('location')!)).json()) as Json;
        };
        const own = await post(holderAt(`http://localhost:${port}`));
        expect((own['api:hasRequestStatus'] as Json)['@id'], JSON.stringify(own)).to.equal(`${API}REQUEST_ACCEPTED`);
        await submit(self, object, change(object, 1, [add(object, 'shippingMarks', str('mark'))]));
        const got = await waitForNotifications(
          self,
          1,
          q({ 'logistics-object': object, 'event-type': 'LOGISTICS_OBJECT_UPDATED' }),
        );
        expect(got.map(revisionOf)).to.deep.equal([2]);
        // Not this server's origin: another port on localhost, the same port under another name.
        for (const other of [`http://localhost:${new URL(subscriber.url).port}`, `http://127.0.0.1:${port}`]) {
          const refused = await post(holderAt(other));
          expect((refused['api:hasRequestStatus'] as Json)['@id'], other).to.equal(`${API}REQUEST_FAILED`);
          expect(JSON.stringify(refused['api:hasError'])).to.match(/resolves to .*not called/);
        }
      } finally {
        await self.close();
      }
    });
  });

  describe('Retry-After and the outbound token', () => {
    let subscriber: TestServer;
    let publisher: TestServer;
    let gateway: LoopbackListener;
    const attempts: {
      at: number;
      authorization: string | undefined;
      webhookId: string | undefined;
      timestamp: string | undefined;
      key: string | undefined;
    }[] = [];
    before(async () => {
      gateway = await startListener((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          attempts.push({
            at: Date.now(),
            authorization: req.headers.authorization,
            webhookId: req.headers['webhook-id'] as string,
            timestamp: req.headers['webhook-timestamp'] as string,
            key: req.headers['idempotency-key'] as string,
          });
          if (attempts.length === 1) return void res.writeHead(503, { 'Retry-After': '1' }).end();
          void forwardNotification(subscriber.url, req, Buffer.concat(chunks), res);
        });
      });
      [subscriber, publisher] = await startPeers(2, (i, urls) =>
        i === 1
          ? {
              internalAgents: [holderAt(urls[0])],
              identityProvider: { clients: [{ id: 'outbound', secret: 'outbound-secret', agent: holderAt(urls[1]) }] },
              outbound: {
                allowPrivateAddresses: true,
                clientCredentials: {
                  tokenUrl: `${urls[1]}/idp/token`,
                  clientId: 'outbound',
                  clientSecret: 'outbound-secret',
                },
              },
              delivery: {
                initialBackoffMs: 50,
                maxBackoffMs: 100,
                callbacks: [{ organization: holderAt(urls[0]), url: `${gateway.url}/notifications` }],
              },
            }
          : {},
      );
    });
    after(async () => {
      await Promise.all([subscriber?.close(), publisher?.close(), gateway?.close()]);
    });

    it("waits as long as the subscriber's Retry-After asks, resends the same id, and carries a client-credentials token when configured", async () => {
      const object = await createObject(publisher, piece());
      await subscribe(subscriber, publisher, subscription(subscriber, object));
      await changeRepeatedly(publisher, object, 1, 1);
      await waitForNotifications(subscriber, 1, q({ 'logistics-object': object }));
      expect(attempts).to.have.length(2);
      expect(attempts[1].at - attempts[0].at).to.be.greaterThanOrEqual(950);
      expect(attempts[1].webhookId).to.equal(attempts[0].webhookId);
      expect(attempts[1].key).to.equal(attempts[0].webhookId);
      expect(Math.abs(Number(attempts[1].timestamp) - Date.now() / 1000)).to.be.lessThan(30);
      const payload = JSON.parse(
        Buffer.from(attempts[1].authorization!.split('.')[1], 'base64url').toString(),
      ) as Record<string, string>;
      expect(payload.sub).to.equal('outbound');
      expect(payload.logistics_agent_uri).to.equal(holderOf(publisher));
      expect(attempts[0].authorization).to.equal(attempts[1].authorization);
    });
  });
});
