import { expect } from 'chai';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { startListener, type LoopbackListener } from './loopback.js';
import { asList } from './changes.js';
import { holderOf } from './peers.js';
import type { TestServer } from './server.js';

export const API = 'https://onerecord.iata.org/ns/api#';
export const CARGO = 'https://onerecord.iata.org/ns/cargo#';
export type Json = Record<string, unknown>;

/** A Subscription of `subscriber`'s holder to `topic` (an object IRI, or a class IRI when `byType`). */
export function subscription(subscriber: TestServer, topic: string, extra: Json = {}, byType = false): Json {
  return {
    '@context': { api: API, cargo: CARGO },
    '@type': 'api:Subscription',
    'api:hasContentType': 'application/ld+json',
    'api:hasSubscriber': { '@id': holderOf(subscriber) },
    'api:hasTopicType': { '@id': byType ? 'api:LOGISTICS_OBJECT_TYPE' : 'api:LOGISTICS_OBJECT_IDENTIFIER' },
    'api:includeSubscriptionEventType': [
      'LOGISTICS_OBJECT_UPDATED',
      'LOGISTICS_OBJECT_CREATED',
      'LOGISTICS_EVENT_RECEIVED',
    ].map((e) => ({ '@id': `api:${e}` })),
    'api:hasTopic': { '@type': 'http://www.w3.org/2001/XMLSchema#anyURI', '@value': topic },
    ...extra,
  };
}

/** `subscriber`'s holder POSTs `body` to `publisher`'s /subscriptions with its own token. */
export async function postSubscription(subscriber: TestServer, publisher: TestServer, body: Json): Promise<Response> {
  return fetch(`${publisher.url}/subscriptions`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${await subscriber.token()}`, 'Content-Type': 'application/ld+json' },
    body: JSON.stringify(body),
  });
}

/** Subscribes and expects a SubscriptionRequest; returns its IRI. */
export async function subscribe(subscriber: TestServer, publisher: TestServer, body: Json): Promise<string> {
  const res = await postSubscription(subscriber, publisher, body);
  expect(res.status, await res.clone().text()).to.equal(201);
  expect(res.headers.get('type')).to.equal(`${API}SubscriptionRequest`);
  const location = res.headers.get('location')!;
  expect(location.startsWith(`${publisher.url}/action-requests/`)).to.equal(true);
  return location;
}

/** The notifications `server` received so far (optionally filtered by the query), in arrival order. */
export async function receivedNotifications(server: TestServer, query = ''): Promise<Json[]> {
  const res = await server.request(`/internal/notifications${query}`);
  expect(res.status, await res.clone().text()).to.equal(200);
  return asList(((await res.json()) as Json)['api:hasItem'] as Json | Json[] | undefined);
}

/** Waits until `server` received at least `count` notifications matching `query`. */
export async function waitForNotifications(
  server: TestServer,
  count: number,
  query = '',
  timeoutMs = 15_000,
): Promise<Json[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const got = await receivedNotifications(server, query);
    if (got.length >= count) return got;
    if (Date.now() > deadline)
      throw new Error(`expected ${count} notifications${query ? ` (${query})` : ''}, got ${got.length}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export const eventTypeOf = (n: Json) => ((n['api:hasEventType'] as Json)['@id'] as string).replace(API, '');
export const anyUris = (value: unknown) => asList(value as Json | Json[] | undefined).map((v) => v['@value'] as string);

/** For a loopback stand-in of a subscriber's endpoint: passes a notification on to the real subscriber and answers with its status. */
export function forwardNotification(
  subscriberUrl: string,
  req: IncomingMessage,
  body: Buffer,
  res: ServerResponse,
): Promise<void> {
  const headers = Object.fromEntries(
    ['authorization', 'content-type', 'idempotency-key'].map((h) => [h, req.headers[h] as string]),
  );
  return fetch(`${subscriberUrl}/notifications`, { method: 'POST', headers, body: new Uint8Array(body) }).then(
    (r) => void res.writeHead(r.status).end(),
  );
}

/**
 * A loopback stand-in for a subscriber's notification endpoint: answers each notification with
 * the status `answer()` gives, or, for 'forward', passes it on to the real subscriber at `subscriberUrl()`.
 */
export function startGateway(answer: () => number | 'forward', subscriberUrl: () => string): Promise<LoopbackListener> {
  // One at a time, in the order they arrived, as an endpoint that handles each request before the next would:
  // the publisher pipelines a queue's notifications, so several are here at once.
  let forwarded: Promise<unknown> = Promise.resolve();
  return startListener((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    const body = new Promise<Buffer>((resolve) => req.on('end', () => resolve(Buffer.concat(chunks))));
    forwarded = forwarded.then(async () => {
      const content = await body;
      const status = answer();
      if (status !== 'forward') return void res.writeHead(status).end();
      await forwardNotification(subscriberUrl(), req, content, res);
    });
  });
}
