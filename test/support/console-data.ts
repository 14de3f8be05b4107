import { expect } from 'chai';
import { authorization, grant } from './access.js';
import { add, change, createObject, del, piece, str, submit } from './changes.js';
import { eventJson } from './events.js';
import { subscription } from './pubsub.js';
import { OTHER_AGENT, postJsonLd, type TestServer } from './server.js';

/** What the console tests and screenshots look at: objects with history, events, a grant and a pending change. */
export interface ConsoleData {
  piece: string;
  shipment: string;
  /** A ChangeRequest on `piece`, pending, targeting its latest revision (2). */
  pending: string;
  /** The grant giving OTHER_AGENT read access to `piece`. */
  grant: string;
}

/** Accepts an action request as the holder (the server runs the `manual` decision policy). */
export async function accept(server: TestServer, request: string): Promise<void> {
  const res = await server.request(`${request}?status=REQUEST_ACCEPTED`, { method: 'PATCH' });
  expect(res.status, await res.clone().text()).to.equal(204);
}

/** Creates, through the API, the data the console shows; `server` must run with decisionPolicy `manual`. */
export async function seedConsoleData(server: TestServer): Promise<ConsoleData> {
  const pieceIri = await createObject(server, { ...piece(), 'cargo:goodsDescription': 'Books' });
  const shipment = await createObject(server, {
    '@context': { cargo: 'https://onerecord.iata.org/ns/cargo#' },
    '@type': 'cargo:Shipment',
    'cargo:goodsDescription': 'Books and maps',
    'cargo:pieces': { '@id': pieceIri },
  });
  await accept(
    server,
    await submit(
      server,
      pieceIri,
      change(pieceIri, 1, [
        add(pieceIri, 'shippingMarks', str('FRAGILE')),
        del(pieceIri, 'goodsDescription', str('Books')),
        add(pieceIri, 'goodsDescription', str('Books, hardback')),
      ]),
    ),
  );
  for (const [code, eventDate] of [
    ['DEP', '2024-05-01T10:00:00Z'],
    ['ARR', '2024-05-01T16:30:00Z'],
  ]) {
    const res = await postJsonLd(server, `${pieceIri}/logistics-events`, eventJson({ code, eventDate }));
    expect(res.status, await res.clone().text()).to.equal(201);
  }
  const readGrant = await grant(server, authorization(OTHER_AGENT, [pieceIri], ['Read']));
  const pending = await submit(
    server,
    pieceIri,
    change(pieceIri, 2, [add(pieceIri, 'shippingMarks', str('THIS SIDE UP'))]),
  );
  return { piece: pieceIri, shipment, pending, grant: readGrant };
}

/** OTHER_AGENT asks to subscribe to `object` (with its own token); returns the SubscriptionRequest, pending. */
export async function askToSubscribe(server: TestServer, object: string): Promise<string> {
  const body = { ...subscription(server, object), 'api:hasSubscriber': { '@id': OTHER_AGENT } };
  const res = await postJsonLd(server, '/subscriptions', body, 'other');
  expect(res.status, await res.clone().text()).to.equal(201);
  return res.headers.get('location')!;
}

/** OTHER_AGENT subscribes to `object` and the holder accepts it. */
export async function subscribePartner(server: TestServer, object: string): Promise<string> {
  const request = await askToSubscribe(server, object);
  await accept(server, request);
  return request;
}
