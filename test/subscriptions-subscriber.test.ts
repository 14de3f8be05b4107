import { expect } from 'chai';
import { expectApiError } from './support/api-error.js';
import { holderOf, startPeers } from './support/peers.js';
import type { TestServer } from './support/server.js';

const API = 'https://onerecord.iata.org/ns/api#';
const CARGO = 'https://onerecord.iata.org/ns/cargo#';
type Json = Record<string, unknown>;

describe('GET /subscriptions: what this server wants, asked by a publisher', function () {
  this.timeout(30_000);
  let publisher: TestServer;
  let subscriber: TestServer;

  before(async () => {
    [publisher, subscriber] = await startPeers(2);
  });
  after(async () => {
    await Promise.all([publisher?.close(), subscriber?.close()]);
  });

  /** The publisher's holder asks the subscriber, with the raw query string given. */
  const ask = async (query: string) =>
    fetch(`${subscriber.url}/subscriptions${query}`, {
      headers: { Authorization: `Bearer ${await publisher.token()}`, Accept: 'application/ld+json; version=2.3.0' },
    });

  it('answers one Subscription for the data holder, echoing the topic, for every spelling of topicType', async () => {
    const object = `${publisher.url}/logistics-objects/abc-123`;
    const spellings = [
      encodeURIComponent(`${API}LOGISTICS_OBJECT_IDENTIFIER`),
      'https://onerecord.iata.org/ns/api/LOGISTICS_OBJECT_IDENTIFIER',
      'api:LOGISTICS_OBJECT_IDENTIFIER',
      'LOGISTICS_OBJECT_IDENTIFIER',
    ];
    for (const topicType of spellings) {
      const res = await ask(`?topicType=${topicType}&topic=${encodeURIComponent(object)}`);
      expect(res.status, await res.clone().text()).to.equal(200);
      expect(res.headers.get('content-type')).to.match(/^application\/ld\+json/);
      const body = (await res.json()) as Json;
      expect(body['@type']).to.equal('api:Subscription');
      expect(body['api:hasSubscriber']).to.deep.equal({ '@id': holderOf(subscriber) });
      expect(body['api:hasTopicType']).to.deep.equal({ '@id': `${API}LOGISTICS_OBJECT_IDENTIFIER` });
      expect(body['api:hasTopic']).to.deep.equal({ '@value': object, '@type': 'xsd:anyURI' });
      expect(body['api:hasContentType']).to.equal('application/ld+json');
      expect((body['api:includeSubscriptionEventType'] as Json[]).map((e) => e['@id'])).to.have.members(
        ['LOGISTICS_OBJECT_CREATED', 'LOGISTICS_OBJECT_UPDATED', 'LOGISTICS_EVENT_RECEIVED'].map((e) => `${API}${e}`),
      );
    }
    const byType = (await (
      await ask(`?topicType=LOGISTICS_OBJECT_TYPE&topic=${encodeURIComponent(`${CARGO}Shipment`)}`)
    ).json()) as Json;
    expect(byType['api:hasTopic']).to.deep.equal({ '@value': `${CARGO}Shipment`, '@type': 'xsd:anyURI' });
  });

  it("answers 400 naming the '#' that was sent unencoded, in topicType or in topic", async () => {
    await expectApiError(
      await ask(`?topicType=${API}LOGISTICS_OBJECT_TYPE&topic=${encodeURIComponent(`${CARGO}Piece`)}`),
      400,
      /topicType .* lost its fragment.*%23/,
    );
    await expectApiError(
      await ask(`?topicType=LOGISTICS_OBJECT_TYPE&topic=${CARGO}Piece`),
      400,
      /topic .* lost its fragment.*%23/,
    );
  });

  it('answers 400 for a missing topic, an unsupported type, a topic that is no Logistics Object IRI, a bad topicType; 401 without a token', async () => {
    await expectApiError(await ask('?topicType=LOGISTICS_OBJECT_TYPE'), 400, /`topic` is missing/);
    await expectApiError(await ask(`?topic=${encodeURIComponent(`${CARGO}Piece`)}`), 400, /`topicType` is missing/);
    await expectApiError(
      await ask(`?topicType=LOGISTICS_OBJECT_TYPE&topic=${encodeURIComponent(`${CARGO}Value`)}`),
      400,
      /Logistics Object Type not supported/,
    );
    await expectApiError(
      await ask(`?topicType=LOGISTICS_OBJECT_TYPE&topic=${encodeURIComponent(`${CARGO}LogisticsEvent`)}`),
      400,
      /not a Logistics Object type/,
    );
    await expectApiError(
      await ask(`?topicType=LOGISTICS_OBJECT_IDENTIFIER&topic=${encodeURIComponent(`${CARGO}Piece`)}`),
      400,
      /not a Logistics Object IRI/,
    );
    await expectApiError(
      await ask(`?topicType=LOGISTICS_OBJECT_IDENTIFIER&topic=not-an-iri`),
      400,
      /not a Logistics Object IRI/,
    );
    await expectApiError(
      await ask(`?topicType=SOMETHING&topic=${encodeURIComponent(`${CARGO}Piece`)}`),
      400,
      /must be LOGISTICS_OBJECT_TYPE or LOGISTICS_OBJECT_IDENTIFIER/,
    );
    await expectApiError(await fetch(`${subscriber.url}/subscriptions?topicType=LOGISTICS_OBJECT_TYPE&topic=x`), 401);
  });
});
