import { expect } from 'chai';
import { add, change, createObject, dbl, del, piece, str, submit } from './support/changes.js';
import { eventJson, postEvent } from './support/events.js';
import { delegationBody } from './support/access.js';
import { holderAt, holderOf, startPeers } from './support/peers.js';
import {
  API,
  CARGO,
  anyUris,
  eventTypeOf,
  receivedNotifications,
  subscribe,
  subscription,
  waitForNotifications,
  type Json,
} from './support/pubsub.js';
import { postJsonLd, type TestServer } from './support/server.js';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const CLI = fileURLToPath(new URL('../src/cli.js', import.meta.url));

const q = (params: Record<string, string>) => `?${new URLSearchParams(params)}`;

describe('publish and subscribe between two servers', function () {
  this.timeout(60_000);
  let subscriber: TestServer;
  let publisher: TestServer;

  before(async () => {
    // The subscriber's holder may read the publisher's objects: an internal actor there (until access grants exist).
    [subscriber, publisher] = await startPeers(2, (i, urls) =>
      i === 1 ? { internalAgents: [holderAt(urls[0])] } : {},
    );
  });
  after(async () => {
    await Promise.all([subscriber?.close(), publisher?.close()]);
  });

  it('object subscription: an accepted SubscriptionRequest, then LOGISTICS_OBJECT_UPDATED with the changed top-level properties, the revision and isTriggeredBy', async () => {
    const object = await createObject(publisher, piece());
    const request = await subscribe(
      subscriber,
      publisher,
      subscription(subscriber, object, { 'api:notifyRequestStatusChange': true }),
    );
    const read = (await (
      await fetch(request, { headers: { Authorization: `Bearer ${await subscriber.token()}` } })
    ).json()) as Json;
    expect((read['api:hasRequestStatus'] as Json)['@id']).to.equal(`${API}REQUEST_ACCEPTED`);
    const own = await waitForNotifications(subscriber, 1, q({ 'event-type': 'SUBSCRIPTION_REQUEST_ACCEPTED' }));
    expect((own[0]['api:isTriggeredBy'] as Json)['@id']).to.equal(request);

    // Only the embedded grossWeight changes, and remarks: both top-level properties are named.
    const current = (await (await publisher.request(object)).json()) as Json;
    const weight = (current['cargo:grossWeight'] as Json)['@id'] as string;
    const changeRequest = await submit(
      publisher,
      object,
      change(object, 1, [
        del(weight, 'numericalValue', dbl('20')),
        add(weight, 'numericalValue', dbl('25')),
        del(object, 'remarks', str('Books')),
        add(object, 'remarks', str('Novels')),
      ]),
    );
    const [updated] = await waitForNotifications(
      subscriber,
      1,
      q({ 'event-type': 'LOGISTICS_OBJECT_UPDATED', 'logistics-object': object }),
    );
    expect(anyUris(updated['api:hasChangedProperty'])).to.have.members([`${CARGO}grossWeight`, `${CARGO}remarks`]);
    expect(updated['api:hasRevision']).to.equal(2);
    expect((updated['api:isTriggeredBy'] as Json)['@id']).to.equal(changeRequest);
    expect(updated['api:hasLogisticsObjectType']).to.deep.equal({ '@type': 'xsd:anyURI', '@value': `${CARGO}Piece` });
    const accepted = await waitForNotifications(subscriber, 1, q({ 'event-type': 'CHANGE_REQUEST_ACCEPTED' }));
    expect((accepted[0]['api:isTriggeredBy'] as Json)['@id']).to.equal(changeRequest);

    await postEvent(publisher, object, eventJson({ code: 'DEP' }));
    const [event] = await waitForNotifications(subscriber, 1, q({ 'event-type': 'LOGISTICS_EVENT_RECEIVED' }));
    expect((event['api:hasLogisticsObject'] as Json)['@id']).to.equal(object);
    expect((event['api:hasLogisticsEvent'] as Json)['@id']).to.match(new RegExp(`^${object}/logistics-events/`));
    // Every notification came from the publisher's holder, with the publisher's own token.
    const all = await waitForNotifications(subscriber, 4, q({ sender: holderOf(publisher) }));
    expect(all.length).to.be.greaterThanOrEqual(4);
  });

  it('type subscription: a subscription to cargo:LogisticsObject hears of a new Piece, with the body when asked for; other event types stay away', async () => {
    await subscribe(
      subscriber,
      publisher,
      subscription(
        subscriber,
        `${CARGO}LogisticsObject`,
        {
          'api:sendLogisticsObjectBody': true,
          'api:includeSubscriptionEventType': { '@id': 'api:LOGISTICS_OBJECT_CREATED' },
        },
        true,
      ),
    );
    const res = await postJsonLd(publisher, '/logistics-objects', {
      '@context': { cargo: CARGO },
      '@type': 'cargo:Piece',
      'cargo:goodsDescription': 'subscribed by type',
    });
    const piece = res.headers.get('location')!;
    const [created] = await waitForNotifications(
      subscriber,
      1,
      q({ 'event-type': 'LOGISTICS_OBJECT_CREATED', 'logistics-object': piece }),
    );
    const body = created['api:hasLogisticsObject'] as Json;
    expect(body['cargo:goodsDescription']).to.equal('subscribed by type');
    expect(created['api:hasRevision']).to.equal(1);
    // An event on the new Piece: this subscription did not ask for LOGISTICS_EVENT_RECEIVED.
    await postEvent(publisher, piece, eventJson({ code: 'ARR' }));
    await new Promise((r) => setTimeout(r, 500));
    expect(
      await waitForNotifications(
        subscriber,
        0,
        q({ 'event-type': 'LOGISTICS_EVENT_RECEIVED', 'logistics-object': piece }),
      ),
    ).to.have.length(0);
  });

  it('subscribing to a remote topic: the internal route and the CLI post the Subscription and keep the SubscriptionRequest IRI', async () => {
    const object = await createObject(publisher, piece());
    const res = await subscriber.request('/internal/remote-subscriptions', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ topic: object }),
    });
    expect(res.status, await res.clone().text()).to.equal(201);
    const record = (await res.json()) as Json;
    expect(record.request).to.match(new RegExp(`^${publisher.url}/action-requests/`));
    expect(res.headers.get('location')).to.equal(record.request);
    expect(record.topic).to.equal(object);
    const onPublisher = (await (await publisher.request(record.request as string)).json()) as Json;
    expect(((onPublisher['api:hasSubscription'] as Json)['api:hasSubscriber'] as Json)['@id']).to.equal(
      holderOf(subscriber),
    );

    const { stdout } = await promisify(execFile)(
      process.execPath,
      [
        CLI,
        'subscribe',
        `${CARGO}Shipment`,
        '--type',
        '--publisher',
        publisher.url,
        '--body',
        '--server',
        subscriber.url,
      ],
      {
        env: { PATH: process.env.PATH, DATA_DIR: subscriber.dataDir },
      },
    );
    const byType = JSON.parse(stdout) as Json;
    expect(byType.topicType).to.equal(`${API}LOGISTICS_OBJECT_TYPE`);
    const listed = (await (await subscriber.request('/internal/remote-subscriptions')).json()) as {
      subscriptions: Json[];
    };
    expect(listed.subscriptions.map((r) => r.request)).to.include.members([record.request, byType.request]);

    await submit(publisher, object, change(object, 1, [add(object, 'shippingMarks', str('remote'))]));
    await waitForNotifications(
      subscriber,
      1,
      q({ 'event-type': 'LOGISTICS_OBJECT_UPDATED', 'logistics-object': object }),
    );
    const bad = await subscriber.request('/internal/remote-subscriptions', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ topic: `${CARGO}Shipment`, topicType: 'LOGISTICS_OBJECT_TYPE' }),
    });
    expect(bad.status).to.equal(400);
    const forbidden = await fetch(`${subscriber.url}/internal/remote-subscriptions`, {
      headers: { Authorization: `Bearer ${await publisher.token()}` },
    });
    expect(forbidden.status).to.equal(403);
  });
  it("a Change that asks for status notifications notifies its requester at each status, without any subscription; the holder's own requests notify nobody", async () => {
    const object = await createObject(publisher, piece());
    const patchAs = async (server: TestServer, body: Json) => {
      const res = await fetch(object, {
        method: 'PATCH',
        headers: { Authorization: `Bearer ${await server.token()}`, 'Content-Type': 'application/ld+json' },
        body: JSON.stringify(body),
      });
      expect(res.status, await res.clone().text()).to.equal(201);
      return res.headers.get('location')!;
    };
    const asked = await patchAs(
      subscriber,
      change(object, 1, [add(object, 'shippingMarks', str('asked'))], { 'api:notifyRequestStatusChange': true }),
    );
    const about = q({ 'logistics-object': object });
    const statusesOf = async (server: TestServer) =>
      (await receivedNotifications(server, about)).filter((n) => eventTypeOf(n).startsWith('CHANGE_REQUEST_'));
    await waitForNotifications(
      subscriber,
      1,
      q({ 'event-type': 'CHANGE_REQUEST_ACCEPTED', 'logistics-object': object }),
    );
    const statuses = await statusesOf(subscriber);
    expect(statuses.map(eventTypeOf)).to.deep.equal(['CHANGE_REQUEST_PENDING', 'CHANGE_REQUEST_ACCEPTED']);
    for (const n of statuses) expect((n['api:isTriggeredBy'] as Json)['@id']).to.equal(asked);
    // The accepted one names the revision the change wrote.
    expect(statuses[1]['api:hasRevision']).to.equal(2);
    // Not asked: nothing; the publisher's holder asked: nothing (it would notify itself).
    await patchAs(subscriber, change(object, 2, [add(object, 'shippingMarks', str('not asked'))]));
    await patchAs(
      publisher,
      change(object, 3, [add(object, 'shippingMarks', str('by the holder'))], {
        'api:notifyRequestStatusChange': true,
      }),
    );
    await new Promise((r) => setTimeout(r, 500));
    expect(await statusesOf(subscriber)).to.have.length(2);
    expect(await statusesOf(publisher)).to.have.length(0);
  });
  it('an AccessDelegation that asks for status notifications notifies its requester of acceptance and revocation', async () => {
    const object = await createObject(publisher, piece());
    const asSubscriber = async (url: string, init: RequestInit) =>
      fetch(url, { ...init, headers: { ...init.headers, Authorization: `Bearer ${await subscriber.token()}` } });
    const body = {
      ...delegationBody({ permissions: ['GET_LOGISTICS_OBJECT'], for: holderOf(subscriber), objects: [object] }),
      'api:notifyRequestStatusChange': true,
    };
    const res = await asSubscriber(`${publisher.url}/access-delegations`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/ld+json' },
      body: JSON.stringify(body),
    });
    expect(res.status, await res.clone().text()).to.equal(201);
    const request = res.headers.get('location')!;
    const about = (type: string) => q({ 'event-type': type, 'logistics-object': object });
    const [accepted] = await waitForNotifications(subscriber, 1, about('ACCESS_DELEGATION_REQUEST_ACCEPTED'));
    expect((accepted['api:isTriggeredBy'] as Json)['@id']).to.equal(request);
    expect((await asSubscriber(request, { method: 'DELETE' })).status).to.equal(204);
    const [revoked] = await waitForNotifications(subscriber, 1, about('ACCESS_DELEGATION_REQUEST_REVOKED'));
    expect((revoked['api:isTriggeredBy'] as Json)['@id']).to.equal(request);
  });
});

describe('publisher-initiated subscriptions from configured partners', function () {
  this.timeout(60_000);
  let partner: TestServer;
  let publisher: TestServer;

  before(async () => {
    [partner, publisher] = await startPeers(2, (i, urls) =>
      i === 1 ? { internalAgents: [holderAt(urls[0])], partners: [{ url: urls[0], types: [`${CARGO}Piece`] }] } : {},
    );
  });
  after(async () => {
    await Promise.all([partner?.close(), publisher?.close()]);
  });

  it('a new object of a partner type makes the publisher ask the partner, whose answer becomes an accepted SubscriptionRequest that notifies it', async () => {
    const object = await createObject(publisher, piece());
    let requests: Json[] = [];
    for (let i = 0; i < 100 && requests.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 50));
      const list = (await (
        await publisher.request(
          `/action-requests?type=SubscriptionRequest&logistics-object=${encodeURIComponent(object)}`,
        )
      ).json()) as Json;
      requests = [list['api:hasItem'] ?? []].flat() as Json[];
    }
    expect(requests).to.have.length(1);
    const request = (await (await publisher.request(requests[0]['@id'] as string)).json()) as Json;
    expect((request['api:hasRequestStatus'] as Json)['@id']).to.equal(`${API}REQUEST_ACCEPTED`);
    expect(((request['api:hasSubscription'] as Json)['api:hasSubscriber'] as Json)['@id']).to.equal(holderOf(partner));
    await submit(publisher, object, change(object, 1, [add(object, 'shippingMarks', str('pushed'))]));
    await waitForNotifications(partner, 1, q({ 'event-type': 'LOGISTICS_OBJECT_UPDATED', 'logistics-object': object }));
    // A Shipment is not a partner type: nobody is asked.
    const shipment = await createObject(publisher, {
      '@context': { cargo: CARGO },
      '@type': 'cargo:Shipment',
      'cargo:goodsDescription': 'not offered',
    });
    await new Promise((r) => setTimeout(r, 300));
    const none = (await (
      await publisher.request(
        `/action-requests?type=SubscriptionRequest&logistics-object=${encodeURIComponent(shipment)}`,
      )
    ).json()) as Json;
    expect(none['api:hasItem']).to.equal(undefined);
  });
});
