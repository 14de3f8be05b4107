import { expect } from 'chai';
import { open } from 'lmdb';
import { join } from 'node:path';
import { literal, namedNode, quad } from '../src/rdf/terms.js';
import { api, requestStatus } from '../src/rdf/vocab.js';
import { ARCHIVE_DIR } from '../src/store/embedded/archive/archive.js';
import type { ArchivedRecord, LegacyArchivedRequest } from '../src/store/embedded/archive/request-archive.js';
import type { DurableStore } from '../src/store/embedded/durable-store.js';
import {
  byRequestTime,
  requestQuads,
  statusEntryQuads,
  type ActionRequestRecord,
} from '../src/store/schema/action-requests.js';
import { as, delegate, partner, PARTNER_CLIENTS } from './support/access.js';
import { asList, createObject, piece, readJson, statusOf } from './support/changes.js';
import { subscription } from './support/pubsub.js';
import { startTestServer, TEST_STORE_BACKEND, type TestServer } from './support/server.js';
import { openStore, tempDir } from './support/store-data.js';

type Json = Awaited<ReturnType<typeof readJson>>;
const AR = 'https://store.example.com/action-requests/';
const T0 = Date.UTC(2026, 10, 1);

/** Request `n` of a kind, requested at T0 + (n mod 3) ms: three share each millisecond, ordered by IRI then. */
function requestRecord(n: number, status: string): ActionRequestRecord {
  const at = new Date(T0 + (n % 3));
  const entry = (number: number, s: string) => ({
    iri: `urn:entry:${n}-${number}`,
    number,
    status: s,
    since: at,
    changedBy: 'https://store.example.com/holder',
  });
  return {
    iri: `${AR}${String((n * 7919) % 1000).padStart(4, '0')}`,
    type: api.ChangeRequest,
    requestedBy: 'https://store.example.com/holder',
    requestedAt: at,
    objects: [`https://store.example.com/logistics-objects/${n % 2}`],
    statuses: [entry(1, requestStatus.PENDING), entry(2, status)],
  };
}

/** Stores requests decided as they are made: finished by the commit that creates them, straight to the archive. */
async function storeFinished(store: DurableStore, records: ActionRequestRecord[]): Promise<void> {
  for (const [n, record] of records.entries()) {
    const [pending, decided] = record.statuses;
    const tx = store.begin({
      insert: [
        ...requestQuads(record, [quad(namedNode(record.iri), namedNode(api.hasDescription), literal(`request ${n}`))]),
        ...statusEntryQuads(record.iri, pending),
        ...statusEntryQuads(record.iri, decided),
      ],
    });
    tx.created.add(record.iri);
    tx.finished.push(record.iri);
    await store.commit(tx);
  }
}

/** What the store answers for its finished requests: the lists (all, by object) and each request with its triples. */
async function answers(store: DurableStore, records: ActionRequestRecord[]) {
  return {
    all: await store.finishedRequests(),
    byObject: await store.finishedRequests('https://store.example.com/logistics-objects/1'),
    each: await Promise.all(records.map((r) => store.finishedRequest(r.iri))),
    triples: await Promise.all(records.map(async (r) => (await store.graphTriples(r.iri)).length)),
  };
}

/** Rewrites the archive of a closed store in the layout before records and graphs were kept apart. */
async function toLegacyLayout(dir: string): Promise<number> {
  const env = open({ path: join(dir, ARCHIVE_DIR), maxDbs: 32 });
  const records = env.openDB<ArchivedRecord, [number, string]>({ name: 'request-records', compression: true });
  const graphs = env.openDB<string, string>({ name: 'request-graphs', compression: true });
  const times = env.openDB<number, string>({ name: 'request-times', compression: true });
  const legacy = env.openDB<LegacyArchivedRequest, string>({ name: 'requests', compression: true });
  let moved = 0;
  for (const { key, value } of records.getRange()) {
    await legacy.put(key[1], { record: value, ntriples: graphs.get(key[1])! });
    moved += 1;
  }
  await Promise.all([records.clearAsync(), graphs.clearAsync(), times.clearAsync()]);
  await env.close();
  return moved;
}

describe('finished action requests: read from the archive in request order, records apart from graphs', function () {
  this.timeout(60_000);

  it('lists in byRequestTime order (ties by IRI) without sorting, before and after the archive is on disk, and after a restart', async () => {
    const { dir, remove } = await tempDir();
    try {
      const records = Array.from({ length: 30 }, (_, n) => requestRecord(n, requestStatus.REJECTED));
      let { store } = await openStore(dir);
      // Half read while their entries still wait for LMDB, merged in among those on disk.
      await storeFinished(store, records.slice(0, 15));
      await store.close();
      ({ store } = await openStore(dir));
      await storeFinished(store, records.slice(15));
      const sorted = [...records].sort(byRequestTime).map((r) => r.iri);
      const listed = await answers(store, records);
      expect(listed.all.map((r) => r.iri)).to.deep.equal(sorted);
      expect(listed.byObject.map((r) => r.iri)).to.deep.equal(
        [...records]
          .filter((_, n) => n % 2 === 1)
          .sort(byRequestTime)
          .map((r) => r.iri),
      );
      expect(listed.each).to.deep.equal(records);
      await store.close();
      ({ store } = await openStore(dir));
      expect(await answers(store, records)).to.deep.equal(listed);
      await store.close();
    } finally {
      await remove();
    }
  });

  it('carries an archive of the older layout (record and graph in one value) to today’s once, answering the same', async () => {
    const { dir, remove } = await tempDir();
    try {
      const records = Array.from({ length: 12 }, (_, n) => requestRecord(n, requestStatus.ACCEPTED));
      let { store } = await openStore(dir);
      await storeFinished(store, records);
      const before = await answers(store, records);
      await store.close();
      expect(await toLegacyLayout(dir)).to.equal(12);
      let log: string[];
      ({ store, log } = await openStore(dir));
      expect(log.join('\n')).to.include('request archive: 12 finished requests carried');
      expect(await answers(store, records)).to.deep.equal(before);
      await store.close();
      ({ store, log } = await openStore(dir));
      expect(log.join('\n'), 'once').not.to.include('request archive:');
      expect(await answers(store, records)).to.deep.equal(before);
      await store.close();
    } finally {
      await remove();
    }
  });
});

/** The IRIs of a list answer's items, in its order, and the items as answered. */
const listed = async (server: TestServer, query = '') => {
  const body = await readJson(server, `/action-requests${query}`);
  return asList(body['api:hasItem'] as Json[]).map((item) => item['@id']);
};

describe('action requests with a final status leave memory for the store', function () {
  this.timeout(60_000);
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ decisionPolicy: 'manual', identityProvider: { clients: PARTNER_CLIENTS } });
  });
  after(() => server.close());

  const hot = (iri: string) =>
    TEST_STORE_BACKEND === 'embedded' ? server.running.embedded!.index.listGraphs().includes(iri) : false;
  const held = (iri: string) => server.running.services.actionRequests.index.get(iri) !== undefined;
  const subscribe = async (object: string) => {
    const res = await server.request('/subscriptions', {
      method: 'POST',
      headers: { 'Content-Type': 'application/ld+json' },
      body: JSON.stringify(subscription(server, object, { 'api:hasSubscriber': { '@id': partner('airline') } })),
    });
    expect(res.status, await res.clone().text()).to.equal(201);
    return res.headers.get('location')!;
  };
  const decide = async (request: string, status: string) => {
    const res = await server.request(`${request}?status=${status}`, { method: 'PATCH' });
    expect(res.status, await res.text()).to.equal(204);
  };

  it('SubscriptionRequests: a rejected and a revoked one are served from the archive, lists and single reads alike, also after a restart; an accepted one stays', async () => {
    const object = await createObject(server, piece());
    const [rejected, revoked, accepted] = [await subscribe(object), await subscribe(object), await subscribe(object)];
    expect(await statusOf(server, rejected)).to.equal('REQUEST_PENDING');
    await decide(rejected, 'REQUEST_REJECTED');
    await decide(revoked, 'REQUEST_ACCEPTED');
    await decide(accepted, 'REQUEST_ACCEPTED');
    const revoke = await server.request(revoked, { method: 'DELETE' });
    expect(revoke.status, await revoke.text()).to.equal(204);
    const subscriptions = server.running.services.subscriptions.index;
    for (const request of [rejected, revoked]) {
      expect([hot(request), held(request), subscriptions.forRequest(request)], request).to.deep.equal([
        false,
        false,
        undefined,
      ]);
    }
    expect(held(accepted)).to.equal(true);
    expect(subscriptions.forRequest(accepted)).not.to.equal(undefined);
    const answers = async () => ({
      each: await Promise.all([rejected, revoked, accepted].map((r) => readJson(server, r))),
      all: await listed(server),
      subscriptions: await listed(server, `?type=SubscriptionRequest`),
      revoked: await listed(server, '?status=REQUEST_REVOKED'),
      pending: await listed(server, '?status=REQUEST_PENDING'),
    });
    const now = await answers();
    expect(now.subscriptions).to.deep.equal([rejected, revoked, accepted]);
    expect(now.revoked).to.deep.equal([revoked]);
    expect(now.pending).not.to.include.members([rejected, revoked, accepted]);
    expect(await Promise.all([rejected, revoked, accepted].map((r) => statusOf(server, r)))).to.deep.equal([
      'REQUEST_REJECTED',
      'REQUEST_REVOKED',
      'REQUEST_ACCEPTED',
    ]);
    await server.stop();
    await server.restart();
    expect([held(rejected), held(revoked), held(accepted)]).to.deep.equal([false, false, true]);
    expect(await answers()).to.deep.equal(now);
  });

  it('AccessDelegationRequests: revoking withdraws the grants and the request leaves memory; it reads and lists the same', async () => {
    const object = await createObject(server, piece());
    const request = await delegate(server, 'holder', {
      permissions: ['GET_LOGISTICS_OBJECT'],
      for: partner('airline'),
      objects: [object],
    });
    expect((await as(server, 'airline', object)).status).to.equal(200);
    expect(held(request)).to.equal(true);
    const res = await server.request(request, { method: 'DELETE' });
    expect(res.status, await res.text()).to.equal(204);
    expect((await as(server, 'airline', object)).status).to.be.oneOf([403, 404]);
    expect([hot(request), held(request)]).to.deep.equal([false, false]);
    const byObject = await listed(server, `?logistics-object=${encodeURIComponent(object)}`);
    expect(byObject).to.include(request);
    expect(await statusOf(server, request)).to.equal('REQUEST_REVOKED');
  });

  it('lists pending requests without reading the store', async () => {
    const reads = server.running.store;
    const finishedRequests = reads.finishedRequests.bind(reads);
    let asked = 0;
    reads.finishedRequests = (object) => {
      asked += 1;
      return finishedRequests(object);
    };
    try {
      await listed(server, '?status=REQUEST_PENDING');
      expect(asked).to.equal(0);
      await listed(server, '?status=REQUEST_REJECTED');
      expect(asked).to.equal(1);
    } finally {
      reads.finishedRequests = finishedRequests;
    }
  });

  it('a request an earlier start kept hot with a final status is finished at the next start', async function () {
    if (TEST_STORE_BACKEND !== 'embedded') this.skip();
    const store = server.running.embedded!;
    const record = { ...requestRecord(1, requestStatus.REJECTED), iri: `${server.url}/action-requests/kept-hot` };
    const tx = store.begin({
      insert: [
        ...requestQuads({ ...record, type: api.SubscriptionRequest, objects: [] }, []),
        ...record.statuses.flatMap((s) => statusEntryQuads(record.iri, s)),
      ],
    });
    await store.commit(tx);
    expect(hot(record.iri)).to.equal(true);
    await server.stop();
    await server.restart();
    expect([hot(record.iri), held(record.iri)]).to.deep.equal([false, false]);
    expect(await statusOf(server, record.iri)).to.equal('REQUEST_REJECTED');
  });
});
