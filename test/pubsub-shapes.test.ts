import { expect } from 'chai';
import { asList, createObject, piece } from './support/changes.js';
import { holderOf, startPeers } from './support/peers.js';
import { API, postSubscription, receivedNotifications, subscription, type Json } from './support/pubsub.js';
import type { TestServer } from './support/server.js';

/** The api:ErrorDetails of an api:Error body as [property, focus node, message]. */
async function details(res: Response): Promise<[string, string, string][]> {
  expect(res.status, 'status').to.equal(400);
  const error = (await res.json()) as Json;
  const plain = (v: unknown) => ((v as Json)?.['@value'] ?? v) as string;
  return asList(error['api:hasErrorDetail'] as Json | Json[]).map((d) => [
    plain(d['api:hasProperty']),
    plain(d['api:hasResource']),
    d['api:hasMessage'] as string,
  ]);
}

describe('Data-model validation of the publish/subscribe API objects received', function () {
  this.timeout(30_000);
  let subscriber: TestServer;
  let publisher: TestServer;
  before(async () => {
    [subscriber, publisher] = await startPeers(2);
  });
  after(async () => {
    await Promise.all([subscriber?.close(), publisher?.close()]);
  });

  it('POST /subscriptions: a Subscription breaking the API shapes is 400 with one detail per violation; no SubscriptionRequest is stored', async () => {
    const object = await createObject(publisher, piece());
    const node = `${publisher.url}/subscriptions/bad`;
    const body = subscription(subscriber, object, {
      '@id': node,
      'api:hasDescription': ['one', 'two'],
      'api:expiresAt': 'tomorrow',
      'api:sendLogisticsObjectBody': 'yes',
      'api:includeSubscriptionEventType': [
        { '@id': 'api:LOGISTICS_OBJECT_UPDATED' },
        { '@id': 'api:CHANGE_REQUEST_ACCEPTED' },
      ],
    });
    const found = await details(await postSubscription(subscriber, publisher, body));
    expect(found).to.have.deep.members([
      [`${API}hasDescription`, node, 'api:hasDescription may appear at most once, got 2 values'],
      [`${API}expiresAt`, node, 'api:expiresAt must be an xsd:dateTime, got "tomorrow"'],
      [
        `${API}sendLogisticsObjectBody`,
        node,
        'api:sendLogisticsObjectBody must be a boolean (true or false), got "yes"',
      ],
      [
        `${API}includeSubscriptionEventType`,
        node,
        'api:includeSubscriptionEventType must be one of api:LOGISTICS_EVENT_RECEIVED, api:LOGISTICS_OBJECT_CREATED, api:LOGISTICS_OBJECT_UPDATED, got <https://onerecord.iata.org/ns/api#CHANGE_REQUEST_ACCEPTED>',
      ],
    ]);
    // Missing required properties: one detail each, also when the body leaves out the type.
    const {
      'api:hasTopicType': _type,
      'api:hasSubscriber': _subscriber,
      '@type': _class,
      ...bare
    } = subscription(subscriber, object, { '@id': node });
    const missing = await details(
      await postSubscription(subscriber, publisher, { ...bare, 'api:hasSubscriber': { '@id': holderOf(subscriber) } }),
    );
    expect(missing.map(([property, focus]) => [property, focus])).to.deep.equal([[`${API}hasTopicType`, node]]);
    const requests = (await (
      await publisher.request(`/action-requests?logistics-object=${encodeURIComponent(object)}`)
    ).json()) as Json;
    expect(requests['api:hasTotalItems']).to.equal(0);
  });

  it('POST /notifications: a Notification breaking the API shapes is 400 with one detail per violation; nothing is stored', async () => {
    const node = `${publisher.url}/notifications/bad`;
    const res = await fetch(`${subscriber.url}/notifications`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${await publisher.token()}`, 'Content-Type': 'application/ld+json' },
      body: JSON.stringify({
        '@context': { api: API },
        '@id': node,
        '@type': 'api:Notification',
        'api:hasEventType': { '@id': 'api:LOGISTICS_OBJECT_DELETED' },
        'api:isTriggeredBy': [
          { '@id': `${publisher.url}/action-requests/1` },
          { '@id': `${publisher.url}/action-requests/2` },
        ],
        'api:hasLogisticsObjectType': [
          { '@type': 'http://www.w3.org/2001/XMLSchema#anyURI', '@value': 'https://onerecord.iata.org/ns/cargo#Piece' },
          {
            '@type': 'http://www.w3.org/2001/XMLSchema#anyURI',
            '@value': 'https://onerecord.iata.org/ns/cargo#Shipment',
          },
        ],
      }),
    });
    const found = await details(res);
    expect(found.map(([property, focus]) => [property, focus])).to.have.deep.members([
      [`${API}hasEventType`, node],
      [`${API}isTriggeredBy`, node],
      [`${API}hasLogisticsObjectType`, node],
    ]);
    expect(found.find(([property]) => property === `${API}isTriggeredBy`)![2]).to.equal(
      'api:isTriggeredBy may appear at most once, got 2 values',
    );
    expect(found.find(([property]) => property === `${API}hasEventType`)![2]).to.match(
      /^api:hasEventType must be one of .*got <https:\/\/onerecord\.iata\.org\/ns\/api#LOGISTICS_OBJECT_DELETED>$/,
    );
    expect(await receivedNotifications(subscriber)).to.deep.equal([]);
  });
});
