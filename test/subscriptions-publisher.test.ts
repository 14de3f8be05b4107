import { expect } from 'chai';
import { readFile } from 'node:fs/promises';
import { expectApiError } from './support/api-error.js';
import { add, change, createObject, piece, str, submit } from './support/changes.js';
import { delegationBody } from './support/access.js';
import { holderAt, holderOf, startPeers } from './support/peers.js';
import {
  API,
  CARGO,
  postSubscription,
  receivedNotifications,
  subscribe,
  subscription,
  waitForNotifications,
  type Json,
} from './support/pubsub.js';
import { postJsonLd, type TestServer } from './support/server.js';

const q = (params: Record<string, string>) => `?${new URLSearchParams(params)}`;
const example = async (name: string) =>
  readFile(new URL(`../../test/fixtures/onerecord-examples/${name}`, import.meta.url), 'utf8');
const EXAMPLE_TOPIC = 'https://1r.example.com/logistics-objects/1a8ded38-1804-467c-a369-81a411416b7c';

describe('POST /subscriptions: the publisher side', function () {
  this.timeout(60_000);
  /** Peer 0 may read the publisher's objects (an internal actor there); peer 1 may not. */
  let reader: TestServer;
  let stranger: TestServer;
  let publisher: TestServer;

  before(async () => {
    [reader, stranger, publisher] = await startPeers(3, (i, urls) =>
      i === 2 ? { internalAgents: [holderAt(urls[0])] } : {},
    );
  });
  after(async () => {
    await Promise.all([reader?.close(), stranger?.close(), publisher?.close()]);
  });

  const statusOf = async (request: string, by: TestServer = publisher) => {
    const res = await fetch(request, { headers: { Authorization: `Bearer ${await by.token()}` } });
    expect(res.status, await res.clone().text()).to.equal(200);
    return (((await res.json()) as Json)['api:hasRequestStatus'] as Json)['@id'] as string;
  };
  const quiet = async (server: TestServer, object: string) => {
    await new Promise((r) => setTimeout(r, 400));
    return receivedNotifications(server, q({ 'logistics-object': object }));
  };

  it('accepts the official Subscription examples as published (topic object rebased to this server), answering 201 with a SubscriptionRequest', async () => {
    const topic = `${publisher.url}/logistics-objects/1a8ded38-1804-467c-a369-81a411416b7c`;
    await createObject(publisher, { ...piece(), '@id': topic });
    for (const name of ['Subscription_example1.json', 'Subscriptions_example1.json', 'Subscriptions_example2.json']) {
      const body = (await example(name)).replaceAll(EXAMPLE_TOPIC, topic);
      const res = await postJsonLd(publisher, '/subscriptions', body);
      expect(res.status, `${name}: ${await res.clone().text()}`).to.equal(201);
      expect(res.headers.get('type')).to.equal(`${API}SubscriptionRequest`);
      const read = (await (await publisher.request(res.headers.get('location')!)).json()) as Json;
      expect(read['@type']).to.equal('api:SubscriptionRequest');
      const sub = read['api:hasSubscription'] as Json;
      expect(sub['api:hasSubscriber']).to.deep.equal({
        '@id': 'https://1r.example.com/logistics-objects/957e2622-9d31-493b-8b8f-3c805064dbda',
      });
      expect((sub['api:hasTopic'] as Json)['@type']).to.equal('xsd:anyURI');
    }
  });

  it('takes api:hasTopic as an xsd:anyURI literal, a plain string or a link ({"@id"}, as IATA\'s test material writes it), and stores the literal', async () => {
    const object = await createObject(publisher, piece());
    for (const topic of [
      { '@type': 'http://www.w3.org/2001/XMLSchema#anyURI', '@value': object },
      object,
      { '@id': object },
    ]) {
      const res = await postSubscription(reader, publisher, subscription(reader, object, { 'api:hasTopic': topic }));
      expect(res.status, `${JSON.stringify(topic)}: ${await res.clone().text()}`).to.equal(201);
      const read = (await (await publisher.request(res.headers.get('location')!)).json()) as Json;
      expect((read['api:hasSubscription'] as Json)['api:hasTopic'], JSON.stringify(topic)).to.deep.equal({
        '@type': 'xsd:anyURI',
        '@value': object,
      });
    }
  });

  it('answers 400 naming the property at fault, 415 for other media types, 403 for a subscription on behalf of someone else', async () => {
    const object = await createObject(publisher, piece());
    const base = subscription(reader, object);
    const bad = async (body: Json, message: RegExp) =>
      expectApiError(await postSubscription(reader, publisher, body), 400, message);
    await bad({ ...base, 'api:hasTopicType': undefined }, /api:hasTopicType must appear at least once/);
    await bad(
      { ...base, 'api:hasTopicType': { '@id': 'api:SOMETHING' } },
      /api:hasTopicType must be one of api:LOGISTICS_OBJECT_IDENTIFIER, api:LOGISTICS_OBJECT_TYPE, got <https:\/\/onerecord\.iata\.org\/ns\/api#SOMETHING>/,
    );
    await bad({ ...base, 'api:hasTopic': undefined }, /api:hasTopic must appear at least once/);
    await bad(
      subscription(reader, `${publisher.url}/logistics-objects/unknown`),
      /not a Logistics Object of this server/,
    );
    await bad(subscription(reader, `${CARGO}Value`, {}, true), /Logistics Object Type not supported/);
    await bad(
      { ...base, 'api:includeSubscriptionEventType': undefined },
      /api:includeSubscriptionEventType must appear at least once/,
    );
    await bad(
      { ...base, 'api:includeSubscriptionEventType': { '@id': 'api:CHANGE_REQUEST_ACCEPTED' } },
      /api:includeSubscriptionEventType must be one of api:LOGISTICS_EVENT_RECEIVED, api:LOGISTICS_OBJECT_CREATED, api:LOGISTICS_OBJECT_UPDATED/,
    );
    await bad({ ...base, 'api:hasContentType': 'text/xml' }, /sent as application\/ld\+json only/);
    await bad(
      {
        ...base,
        'api:expiresAt': { '@type': 'http://www.w3.org/2001/XMLSchema#dateTime', '@value': '2001-01-01T00:00:00Z' },
      },
      /not in the future/,
    );
    await bad({ ...base, '@type': 'api:Notification', 'api:hasSubscriber': undefined }, /no api:Subscription/);
    const turtle = await fetch(`${publisher.url}/subscriptions`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${await reader.token()}`, 'Content-Type': 'text/plain' },
      body: 'x',
    });
    await expectApiError(turtle, 415);
    await expectApiError(await postSubscription(stranger, publisher, base), 403, /only the subscribing Organization/);
  });

  it('a subscriber that may not read the object stays pending; accepted by the holder, it still hears nothing of an object it may not read', async () => {
    const object = await createObject(publisher, piece());
    const request = await subscribe(stranger, publisher, subscription(stranger, object));
    expect(await statusOf(request)).to.equal(`${API}REQUEST_PENDING`);
    expect(await statusOf(request, stranger)).to.equal(`${API}REQUEST_PENDING`);
    const accept = await publisher.request(`${request}?status=REQUEST_ACCEPTED`, { method: 'PATCH' });
    expect(accept.status, await accept.text()).to.equal(204);
    expect(await statusOf(request)).to.equal(`${API}REQUEST_ACCEPTED`);
    await submit(publisher, object, change(object, 1, [add(object, 'shippingMarks', str('seen by nobody'))]));
    expect(await quiet(stranger, object)).to.have.length(0);
  });

  it('a subscriber given read access by a delegation hears of the object with its body; once the delegation is revoked, it hears nothing more of it', async () => {
    const object = await createObject(publisher, piece());
    const granted = await publisher.request('/access-delegations', {
      method: 'POST',
      headers: { 'Content-Type': 'application/ld+json' },
      body: JSON.stringify(
        delegationBody({ permissions: ['GET_LOGISTICS_OBJECT'], for: holderOf(stranger), objects: [object] }),
      ),
    });
    expect(granted.status, await granted.clone().text()).to.equal(201);
    const delegation = granted.headers.get('location')!;
    expect(await statusOf(delegation)).to.equal(`${API}REQUEST_ACCEPTED`);
    const request = await subscribe(
      stranger,
      publisher,
      subscription(stranger, object, { 'api:sendLogisticsObjectBody': true }),
    );
    expect(await statusOf(request)).to.equal(`${API}REQUEST_ACCEPTED`);
    await submit(publisher, object, change(object, 1, [add(object, 'shippingMarks', str('readable'))]));
    const [updated] = await waitForNotifications(
      stranger,
      1,
      q({ 'event-type': 'LOGISTICS_OBJECT_UPDATED', 'logistics-object': object }),
    );
    expect((updated['api:hasLogisticsObject'] as Json)['cargo:shippingMarks']).to.equal('readable');
    expect((await publisher.request(delegation, { method: 'DELETE' })).status).to.equal(204);
    await submit(publisher, object, change(object, 2, [add(object, 'shippingMarks', str('no longer readable'))]));
    expect((await quiet(stranger, object)).map((n) => n['api:hasRevision'])).to.deep.equal([2]);
  });

  it('revoking the SubscriptionRequest (DELETE by the subscriber) stops its notifications; so does expiresAt', async () => {
    const object = await createObject(publisher, piece());
    const request = await subscribe(reader, publisher, subscription(reader, object));
    const expiring = await createObject(publisher, piece());
    const soon = new Date(Date.now() + 1500).toISOString();
    await subscribe(
      reader,
      publisher,
      subscription(reader, expiring, {
        'api:expiresAt': { '@type': 'http://www.w3.org/2001/XMLSchema#dateTime', '@value': soon },
      }),
    );
    await submit(publisher, object, change(object, 1, [add(object, 'shippingMarks', str('one'))]));
    await submit(publisher, expiring, change(expiring, 1, [add(expiring, 'shippingMarks', str('one'))]));
    await waitForNotifications(reader, 1, q({ 'logistics-object': object }));
    await waitForNotifications(reader, 1, q({ 'logistics-object': expiring }));
    const revoke = await fetch(request, {
      method: 'DELETE',
      headers: { Authorization: `Bearer ${await reader.token()}` },
    });
    expect(revoke.status, await revoke.text()).to.equal(204);
    expect(await statusOf(request)).to.equal(`${API}REQUEST_REVOKED`);
    while (Date.now() < Date.parse(soon) + 50) await new Promise((r) => setTimeout(r, 100));
    await submit(publisher, object, change(object, 2, [add(object, 'shippingMarks', str('two'))]));
    await submit(publisher, expiring, change(expiring, 2, [add(expiring, 'shippingMarks', str('two'))]));
    expect(await quiet(reader, object)).to.have.length(1);
    expect(await quiet(reader, expiring)).to.have.length(1);
  });

  it('status notifications only where notifyRequestStatusChange is true', async () => {
    const object = await createObject(publisher, piece());
    await subscribe(
      reader,
      publisher,
      subscription(reader, object, { 'api:includeSubscriptionEventType': { '@id': 'api:LOGISTICS_EVENT_RECEIVED' } }),
    );
    await submit(publisher, object, change(object, 1, [add(object, 'shippingMarks', str('quiet'))]));
    expect(await quiet(reader, object)).to.have.length(0);
  });
});
