import { expect } from 'chai';
import { readFile } from 'node:fs/promises';
import { expectApiError } from './support/api-error.js';
import { asList, createObject } from './support/changes.js';
import { holderOf, startPeers } from './support/peers.js';
import { TEST_STORE_BACKEND, type TestServer } from './support/server.js';
import { startListener, type LoopbackListener } from './support/loopback.js';

const API = 'https://onerecord.iata.org/ns/api#';
type Json = Record<string, unknown>;
const METRICS_TOKEN = 'metrics-token-for-notification-tests-0123456789';
const example = async (n: number) =>
  JSON.parse(
    await readFile(
      new URL(`../../test/fixtures/onerecord-examples/Notification_example${n}.json`, import.meta.url),
      'utf8',
    ),
  ) as Json;

/** POSTs a notification from `from` (its holder's own token) to `to`. */
async function send(
  from: TestServer,
  to: TestServer,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Response> {
  return fetch(`${to.url}/notifications`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${await from.token()}`, 'Content-Type': 'application/ld+json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

async function received(server: TestServer, query = ''): Promise<Json[]> {
  const res = await server.request(`/internal/notifications${query}`);
  expect(res.status, await res.clone().text()).to.equal(200);
  const body = (await res.json()) as Json;
  return asList(body['api:hasItem'] as Json | Json[] | undefined);
}

describe('POST /notifications: receiving notifications from another server', function () {
  this.timeout(30_000);
  let publisher: TestServer;
  let subscriber: TestServer;
  let webhook: LoopbackListener;
  const forwarded: { key: string | undefined; body: Json }[] = [];

  before(async () => {
    webhook = await startListener((req, res) => {
      let text = '';
      req.on('data', (chunk: Buffer) => (text += chunk.toString()));
      req.on('end', () => {
        forwarded.push({ key: req.headers['idempotency-key'] as string | undefined, body: JSON.parse(text) as Json });
        res.writeHead(204).end();
      });
    });
    [publisher, subscriber] = await startPeers(2, (i) =>
      i === 1 ? { notifications: { webhookUrl: `${webhook.url}/hook` }, metrics: { token: METRICS_TOKEN } } : {},
    );
  });
  after(async () => {
    await Promise.all([publisher?.close(), subscriber?.close(), webhook?.close()]);
  });

  it('accepts every official notification example with 204 and lists each once, by sender', async () => {
    for (let n = 1; n <= 6; n++) {
      const res = await send(publisher, subscriber, await example(n));
      expect(res.status, `example ${n}: ${await res.text()}`).to.equal(204);
    }
    const all = await received(subscriber, `?sender=${encodeURIComponent(holderOf(publisher))}`);
    expect(all).to.have.length(6);
    expect(await received(subscriber, '?sender=https%3A%2F%2Fnobody.example.com%2Fx')).to.have.length(0);
    const updated = await received(subscriber, '?event-type=LOGISTICS_OBJECT_UPDATED');
    expect(updated).to.have.length(1);
    expect(updated[0]['api:hasChangedProperty']).to.deep.equal({
      '@type': 'xsd:anyURI',
      '@value': 'https://onerecord.iata.org/ns/cargo#grossWeight',
    });
    const byObject = await received(
      subscriber,
      `?logistics-object=${encodeURIComponent('https://1r.example.com/logistics-objects/1a8ded38-1804-467c-a369-81a411416b3c')}`,
    );
    expect(byObject.map((n) => (n['api:hasEventType'] as Json)['@id'])).to.have.members([
      `${API}LOGISTICS_OBJECT_CREATED`,
      `${API}LOGISTICS_EVENT_RECEIVED`,
    ]);
    expect(await received(subscriber, '?received-after=20990101T000000Z')).to.have.length(0);
    expect(await received(subscriber, '?received-before=20990101T000000Z')).to.have.length(6);
    // Each stored notification went on to the internal webhook, with its id as Idempotency-Key.
    for (let i = 0; i < 50 && forwarded.length < 6; i++) await new Promise((r) => setTimeout(r, 50));
    expect(forwarded).to.have.length(6);
    expect(forwarded.map((f) => f.key)).to.have.members(all.map((n) => n['@id']));
    expect(forwarded.map((f) => f.body['@type'])).to.deep.equal(Array(6).fill('api:Notification'));
  });

  it('stores a duplicate once, whether recognised by @id or by Idempotency-Key, and keeps it across a restart', async () => {
    const withId = { ...(await example(1)), '@id': `${publisher.url}/notifications/dup-1` };
    for (let i = 0; i < 3; i++) expect((await send(publisher, subscriber, withId)).status).to.equal(204);
    const withoutId = await example(5);
    for (let i = 0; i < 3; i++)
      expect((await send(publisher, subscriber, withoutId, { 'Idempotency-Key': 'key-5' })).status).to.equal(204);
    const concurrent = await Promise.all(
      [1, 2, 3, 4].map(() => send(publisher, subscriber, { ...withId, '@id': `${publisher.url}/notifications/dup-2` })),
    );
    expect(concurrent.map((r) => r.status).filter((s) => s === 204).length).to.be.greaterThan(0);
    for (const r of concurrent) expect([204, 409]).to.include(r.status);
    await subscriber.stop();
    await subscriber.restart();
    expect((await send(publisher, subscriber, withId)).status).to.equal(204);
    expect((await send(publisher, subscriber, withoutId, { 'Idempotency-Key': 'key-5' })).status).to.equal(204);
    const ids = (await received(subscriber)).map((n) => n['@id']);
    expect(ids.filter((id) => id === `${publisher.url}/notifications/dup-1`)).to.have.length(1);
    expect(ids.filter((id) => id === `${publisher.url}/notifications/dup-2`)).to.have.length(1);
    expect((await received(subscriber, '?event-type=CHANGE_REQUEST_ACCEPTED')).length).to.equal(2); // example 5 of the first test, and once here
    // Arrival numbers go on above those before the restart: a new one lists last.
    const fresh = `${publisher.url}/notifications/after-restart`;
    expect((await send(publisher, subscriber, { ...(await example(2)), '@id': fresh })).status).to.equal(204);
    const res = await subscriber.request('/internal/notifications/receipts?limit=1000');
    const receipts = ((await res.json()) as { receipts: { notification: string; sequence: number }[] }).receipts;
    const numbers = receipts.map((r) => r.sequence);
    expect(receipts.at(-1)?.notification).to.equal(fresh);
    expect(Math.max(...numbers.slice(0, -1))).to.be.below(numbers.at(-1)!);
  });

  it('answers 400 naming what is wrong with an invalid notification, and stores nothing', async () => {
    const before = (await received(subscriber)).length;
    const base = await example(1);
    await expectApiError(
      await send(publisher, subscriber, { ...base, 'api:hasEventType': undefined }),
      400,
      /api:hasEventType must appear at least once/,
    );
    await expectApiError(
      await send(publisher, subscriber, { ...base, 'api:hasEventType': { '@id': 'api:SOMETHING_ELSE' } }),
      400,
      /api:hasEventType must be one of .*, got <https:\/\/onerecord\.iata\.org\/ns\/api#SOMETHING_ELSE>/,
    );
    await expectApiError(
      await send(publisher, subscriber, { ...base, '@type': 'api:Subscription' }),
      400,
      /no node of type api:Notification/,
    );
    await expectApiError(
      await send(publisher, subscriber, {
        ...base,
        'api:hasLogisticsObject': [
          { '@id': 'https://a.example/logistics-objects/1' },
          { '@id': 'https://a.example/logistics-objects/2' },
        ],
      }),
      400,
      /api:hasLogisticsObject may appear at most once, got 2 values/,
    );
    const unreadable = await send(publisher, subscriber, '{"@type": ');
    await expectApiError(unreadable, 400, /not valid JSON/);
    // A refused notification closes its connection: nothing a publisher pipelined behind it is handled before it is sent again.
    expect(unreadable.headers.get('connection')).to.equal('close');
    expect((await received(subscriber)).length).to.equal(before);
    expect((await send(publisher, subscriber, base)).headers.get('connection')).to.equal('keep-alive');
  });

  // The SPARQL replica is the embedded store's (an engine answers /sparql itself): there is nothing to check on the engine.
  if (TEST_STORE_BACKEND === 'embedded')
    it('sends no received notification to the SPARQL replica: no view shows them', async () => {
      // Commits the replica has applied (each one observed once on this histogram).
      const applied = async () => {
        const text = await (
          await fetch(`${subscriber.url}/metrics`, { headers: { Authorization: `Bearer ${METRICS_TOKEN}` } })
        ).text();
        const line = text.split('\n').find((l) => l.startsWith('onerecord_sparql_replica_visible_seconds_count '));
        return Number(line?.slice(line.lastIndexOf(' ') + 1) ?? 0);
      };
      const settled = async (expected?: number) => {
        let last = -1;
        for (let i = 0; i < 100; i++) {
          const now = await applied();
          if (expected === undefined ? now === last : now === expected) return now;
          last = now;
          await new Promise((r) => setTimeout(r, 100));
        }
        return last;
      };
      // The replica runs once /sparql is queried (sparql.replicaIdleMillis): a query starts it.
      expect((await subscriber.request('/sparql?query=ASK%7B%7D')).status).to.equal(200);
      const before = await settled();
      for (let i = 0; i < 5; i++)
        expect(
          (
            await send(publisher, subscriber, {
              ...(await example(1)),
              '@id': `${publisher.url}/notifications/replica-${i}`,
            })
          ).status,
        ).to.equal(204);
      await createObject(subscriber);
      // The object's commit reaches the replica; the five notifications before it do not.
      expect(await settled(before + 1)).to.equal(before + 1);
    });

  it('answers 415 to other media types, 405 to other methods, 401 without a token, 403 on the internal list for others', async () => {
    const turtle = await fetch(`${subscriber.url}/notifications`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${await publisher.token()}`, 'Content-Type': 'text/plain' },
      body: 'hello',
    });
    await expectApiError(turtle, 415);
    const get = await fetch(`${subscriber.url}/notifications`, {
      headers: { Authorization: `Bearer ${await publisher.token()}` },
    });
    await expectApiError(get, 405);
    expect(get.headers.get('allow')).to.equal('POST');
    await expectApiError(
      await fetch(`${subscriber.url}/notifications`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/ld+json' },
        body: '{}',
      }),
      401,
    );
    await expectApiError(
      await fetch(`${subscriber.url}/internal/notifications`, {
        headers: { Authorization: `Bearer ${await publisher.token()}` },
      }),
      403,
    );
  });
});
