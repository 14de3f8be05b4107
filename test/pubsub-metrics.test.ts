import { expect } from 'chai';
import { add, change, createObject, piece, str, submit } from './support/changes.js';
import type { LoopbackListener } from './support/loopback.js';
import { holderAt, startPeers } from './support/peers.js';
import { startGateway, subscribe, subscription, waitForNotifications } from './support/pubsub.js';
import type { TestServer } from './support/server.js';

const METRICS_TOKEN = 'metrics-token-for-pubsub-tests-0123456789';

async function scrape(server: TestServer): Promise<string> {
  const res = await fetch(`${server.url}/metrics`, { headers: { Authorization: `Bearer ${METRICS_TOKEN}` } });
  expect(res.status).to.equal(200);
  return res.text();
}

/** The value of one sample (`labels` as written in the exposition, e.g. `outcome="delivered"`); 0 when absent. */
function sample(text: string, name: string, labels = ''): number {
  const line = text.split('\n').find((l) => l.startsWith(labels ? `${name}{${labels}} ` : `${name} `));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
}

const deliveries = (text: string, outcome: string) =>
  sample(text, 'onerecord_notification_deliveries_total', `outcome="${outcome}"`);

/** Scrapes `server` until `ready` holds for the exposition (or fails after 10 s). */
async function until(server: TestServer, ready: (text: string) => boolean): Promise<string> {
  for (let i = 0; ; i++) {
    const text = await scrape(server);
    if (ready(text)) return text;
    if (i === 200)
      throw new Error(
        `metrics never reached the expected state:\n${text
          .split('\n')
          .filter((l) => /notification|outbox/.test(l))
          .join('\n')}`,
      );
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('metrics of publish/subscribe: outbox depth, deliveries by outcome, dead letters', function () {
  this.timeout(60_000);
  let subscriber: TestServer;
  let publisher: TestServer;
  let gateway: LoopbackListener;
  /** What the subscriber's notification endpoint answers: a fixed status, or the real subscriber's answer. */
  let answer: number | 'forward' = 'forward';
  before(async () => {
    gateway = await startGateway(
      () => answer,
      () => subscriber.url,
    );
    [subscriber, publisher] = await startPeers(2, (i, urls) => ({
      metrics: { token: METRICS_TOKEN },
      ...(i === 1
        ? {
            internalAgents: [holderAt(urls[0])],
            delivery: {
              initialBackoffMs: 50,
              maxBackoffMs: 100,
              retryWindowMs: 3000,
              callbacks: [{ organization: holderAt(urls[0]), url: `${gateway.url}/notifications` }],
            },
          }
        : {}),
    }));
  });
  after(async () => {
    await Promise.all([subscriber?.close(), publisher?.close(), gateway?.close()]);
  });

  it('counts a delivered notification on both sides and shows an empty outbox afterwards', async () => {
    answer = 'forward';
    const object = await createObject(publisher, piece());
    await subscribe(subscriber, publisher, subscription(subscriber, object));
    await submit(publisher, object, change(object, 1, [add(object, 'shippingMarks', str('mark 1'))]));
    await waitForNotifications(subscriber, 1);
    // Counted when the subscriber answers; it leaves the outbox with the commit that follows.
    const text = await until(
      publisher,
      (t) => deliveries(t, 'delivered') === 1 && sample(t, 'onerecord_outbox_notifications') === 0,
    );
    expect(sample(text, 'onerecord_notifications_queued_total')).to.equal(1);
    expect(sample(text, 'onerecord_outbox_queues')).to.equal(0);
    expect(sample(text, 'onerecord_outbox_dead_letters')).to.equal(0);
    expect(sample(await scrape(subscriber), 'onerecord_notifications_received_total')).to.equal(1);
  });

  it('a failing subscriber: failed attempts and the outbox depth, then dead letters; a replay delivers them and empties the list', async () => {
    answer = 503;
    const before = await scrape(publisher);
    const object = await createObject(publisher, piece());
    await subscribe(subscriber, publisher, subscription(subscriber, object));
    for (let r = 1; r <= 2; r++)
      await submit(publisher, object, change(object, r, [add(object, 'shippingMarks', str(`mark ${r}`))]));
    const failing = await until(publisher, (t) => deliveries(t, 'failed') > deliveries(before, 'failed'));
    expect(sample(failing, 'onerecord_outbox_notifications')).to.equal(2);
    expect(sample(failing, 'onerecord_outbox_queues')).to.equal(1);
    const dead = await until(publisher, (t) => sample(t, 'onerecord_outbox_dead_letters') === 2);
    expect(deliveries(dead, 'dead_lettered') - deliveries(before, 'dead_lettered')).to.equal(2);
    expect(sample(dead, 'onerecord_outbox_notifications')).to.equal(0);

    answer = 'forward';
    const res = await publisher.request('/internal/outbox/dead-letters/replay', { method: 'POST' });
    expect(res.status).to.equal(200);
    const replayed = await until(
      publisher,
      (t) =>
        deliveries(t, 'delivered') === deliveries(before, 'delivered') + 2 &&
        sample(t, 'onerecord_outbox_notifications') === 0,
    );
    expect(sample(replayed, 'onerecord_outbox_dead_letters')).to.equal(0);
  });

  it('a notification of a subscription revoked before it could be sent is counted as dropped', async () => {
    answer = 503;
    const before = await scrape(publisher);
    const object = await createObject(publisher, piece());
    const request = await subscribe(subscriber, publisher, subscription(subscriber, object));
    await submit(publisher, object, change(object, 1, [add(object, 'shippingMarks', str('mark 1'))]));
    await until(publisher, (t) => sample(t, 'onerecord_outbox_notifications') === 1);
    const revoked = await fetch(request, {
      method: 'DELETE',
      headers: { Authorization: `Bearer ${await subscriber.token()}` },
    });
    expect(revoked.status, await revoked.clone().text()).to.equal(204);
    // The subscriber goes on refusing: a send that left before the revocation committed may still be
    // on its way, and must fail rather than be delivered; its retry is the attempt that drops it.
    const text = await until(
      publisher,
      (t) =>
        deliveries(t, 'dropped') === deliveries(before, 'dropped') + 1 &&
        sample(t, 'onerecord_outbox_notifications') === 0,
    );
    expect(deliveries(text, 'delivered')).to.equal(deliveries(before, 'delivered'));
    expect(deliveries(text, 'dead_lettered')).to.equal(deliveries(before, 'dead_lettered'));
  });
});
