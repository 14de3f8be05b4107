import { startListener, type LoopbackListener } from './loopback.js';

/** A notification as a subscriber server received it. */
export interface ReceivedNotification {
  /** Its Idempotency-Key (the notification's @id). */
  id: string;
  object: string;
  eventType: string;
  revision: number;
}

/**
 * A subscriber's notification endpoint on loopback (`{url}/notifications`, where notifications
 * for the Organization `{url}/logistics-objects/subscriber` go): answers 204 and keeps what came,
 * in arrival order.
 */
export async function startNotificationSink(): Promise<
  LoopbackListener & { organization: string; received: ReceivedNotification[] }
> {
  const received: ReceivedNotification[] = [];
  const listener = await startListener((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
      const idOf = (v: unknown) => ((v as { '@id': string } | undefined)?.['@id'] ?? '') as string;
      received.push({
        id: String(req.headers['idempotency-key']),
        object: idOf(body['api:hasLogisticsObject']),
        eventType: idOf(body['api:hasEventType']).replace(/^.*[#:]/, ''),
        revision: Number(body['api:hasRevision']),
      });
      res.writeHead(204).end();
    });
  });
  return Object.assign(listener, { organization: `${listener.url}/logistics-objects/subscriber`, received });
}

/** A Subscription of `subscriber` to every cargo:Piece, created and updated. */
export function pieceSubscription(subscriber: string): Record<string, unknown> {
  return {
    '@context': { api: 'https://onerecord.iata.org/ns/api#', cargo: 'https://onerecord.iata.org/ns/cargo#' },
    '@type': 'api:Subscription',
    'api:hasContentType': 'application/ld+json',
    'api:hasSubscriber': { '@id': subscriber },
    'api:hasTopicType': { '@id': 'api:LOGISTICS_OBJECT_TYPE' },
    'api:includeSubscriptionEventType': [
      { '@id': 'api:LOGISTICS_OBJECT_CREATED' },
      { '@id': 'api:LOGISTICS_OBJECT_UPDATED' },
    ],
    'api:hasTopic': {
      '@type': 'http://www.w3.org/2001/XMLSchema#anyURI',
      '@value': 'https://onerecord.iata.org/ns/cargo#Piece',
    },
  };
}

/** Waits up to 30 s for as many distinct notifications as `expected` holds, then answers `deliveryFaults`. */
export async function faultsOnceDelivered(
  received: readonly ReceivedNotification[],
  expected: ReadonlySet<string>,
): Promise<string[]> {
  for (
    const deadline = Date.now() + 30_000;
    new Set(received.map((n) => n.id)).size < expected.size && Date.now() < deadline;
  )
    await new Promise((resolve) => setTimeout(resolve, 100));
  return deliveryFaults(received, expected);
}

/**
 * What is wrong with `received` against the notifications `expected` (`object revision eventType`
 * keys): one missing, one received under two ids, one not expected; and, per object, copies whose
 * last arrival is not in revision order.
 */
export function deliveryFaults(received: readonly ReceivedNotification[], expected: ReadonlySet<string>): string[] {
  const faults: string[] = [];
  const ids = new Map<string, Set<string>>();
  const lastArrival = new Map<string, number>();
  received.forEach((n, i) => {
    const key = `${n.object} ${n.revision} ${n.eventType}`;
    if (!ids.has(key)) ids.set(key, new Set());
    ids.get(key)!.add(n.id);
    lastArrival.set(n.id, i);
  });
  for (const key of expected) if (!ids.has(key)) faults.push(`missing: ${key}`);
  for (const [key, set] of ids) {
    if (!expected.has(key)) faults.push(`not expected: ${key}`);
    if (set.size > 1) faults.push(`${key} under ${set.size} ids`);
  }
  // Order: the last copy of each notification of an object comes in revision order.
  const byObject = new Map<string, { revision: number; at: number }[]>();
  for (const n of received) {
    if (!byObject.has(n.object)) byObject.set(n.object, []);
    const list = byObject.get(n.object)!;
    if (!list.some((x) => x.revision === n.revision)) list.push({ revision: n.revision, at: lastArrival.get(n.id)! });
  }
  for (const [object, list] of byObject) {
    const order = [...list].sort((a, b) => a.at - b.at).map((x) => x.revision);
    if (order.some((r, i) => i > 0 && r < order[i - 1]))
      faults.push(`${object}: revisions arrived as ${order.join(',')}`);
  }
  return faults;
}
