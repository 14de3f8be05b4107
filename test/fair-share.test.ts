import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { expect } from 'chai';
import { expectApiError } from './support/api-error.js';
import { createObject, piece } from './support/changes.js';
import {
  PARTNER_CLIENTS,
  as,
  authorization,
  grant,
  partner,
  partnerToken,
  type PartnerName,
} from './support/access.js';
import { startTestServer, type TestServer } from './support/server.js';
import { typeScopedNodes } from '../scripts/bench/fixtures.js';

const CARGO = 'https://onerecord.iata.org/ns/cargo#';
/** A cross product of five patterns: far longer than the time budget on any store with an object in it. */
const SLOW = 'SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i . ?j ?k ?l . ?m ?n2 ?o }';
const QUICK = `SELECT ?d WHERE { ?s <${CARGO}goodsDescription> ?d }`;

/** A request whose body is sent in part and then held: it stays in flight until `finish` or `abort`. */
interface HeldRequest {
  answered: Promise<IncomingMessage>;
  /** Sends `bytes` more bytes of body. */
  send(bytes: number): void;
  finish(): void;
}

function hold(
  server: TestServer,
  token: string,
  path: string,
  declared: number | 'chunked',
  firstBytes: number,
): HeldRequest {
  const headers: Record<string, string | number> = {
    Authorization: `Bearer ${token}`,
    'Content-Type': 'application/ld+json',
  };
  if (declared !== 'chunked') headers['Content-Length'] = declared;
  const req: ClientRequest = httpRequest(`${server.url}${path}`, { method: 'PATCH', headers, agent: false });
  const answered = new Promise<IncomingMessage>((resolve, reject) => {
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => resolve(res));
    });
    req.on('error', reject);
  });
  // Awaited by the test; a test that failed before leaves it to end with the server.
  answered.catch(() => undefined);
  let sent = 0;
  const send = (bytes: number) => {
    req.write(' '.repeat(bytes));
    sent += bytes;
  };
  send(firstBytes);
  return { answered, send, finish: () => req.end(declared === 'chunked' ? undefined : ' '.repeat(declared - sent)) };
}

/** Polls `probe` until it answers `status` (the server has taken the held requests by then); its last answer. */
async function until(status: number, probe: () => Promise<Response>): Promise<Response> {
  for (const deadline = Date.now() + 10_000; ; ) {
    const res = await probe();
    if (res.status === status || Date.now() > deadline) return res;
    await res.arrayBuffer();
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function sparql(server: TestServer, who: PartnerName | 'holder', query: string): Promise<Response> {
  return as(server, who, `/sparql?${new URLSearchParams({ query })}`, {
    headers: { Accept: 'application/sparql-results+json' },
  });
}

describe('fair share between callers', function () {
  this.timeout(60_000);

  describe('requests in flight per caller (limits.perCaller.requestsInFlight)', () => {
    let server: TestServer;
    let object: string;
    before(async () => {
      server = await startTestServer({
        limits: { perCaller: { requestsInFlight: 2 } },
        identityProvider: { clients: PARTNER_CLIENTS },
      });
      object = await createObject(server, piece());
      await grant(server, authorization(partner('airline'), [object], ['Read']));
    });
    after(() => server.close());

    it('past the budget: 429 with Retry-After, on the fast path and in the app; other callers unaffected; released once answered', async () => {
      const airline = await partnerToken(server, 'airline');
      const path = new URL(object).pathname;
      expect((await as(server, 'airline', path)).status).to.equal(200);
      const held = [hold(server, airline, path, 100, 10), hold(server, airline, path, 100, 10)];
      // GET of an object the fast path answers, and a route only the app has.
      const refused = await until(429, () => as(server, 'airline', path));
      expect(refused.headers.get('retry-after')).to.equal('1');
      await expectApiError(refused, 429, /limits\.perCaller\.requestsInFlight/);
      expect((await as(server, 'airline', '/')).status).to.equal(429);
      // Another partner, and the data holder, are not held back by the airline's requests.
      expect((await as(server, 'handler', '/')).status).to.equal(200);
      expect((await server.request(path)).status).to.equal(200);
      for (const request of held) request.finish();
      await Promise.all(held.map((request) => request.answered));
      expect((await as(server, 'airline', path)).status).to.equal(200);
    });
  });

  describe('body bytes in flight per caller (limits.perCaller.bodyBytesInFlight)', () => {
    let server: TestServer;
    let object: string;
    before(async () => {
      server = await startTestServer({
        limits: { perCaller: { bodyBytesInFlight: 1000 } },
        identityProvider: { clients: PARTNER_CLIENTS },
      });
      object = await createObject(server, piece());
    });
    after(() => server.close());

    const patchWith = (who: PartnerName, bytes: number) =>
      as(server, who, new URL(object).pathname, {
        method: 'PATCH',
        headers: { 'Content-Type': 'application/ld+json' },
        body: ' '.repeat(bytes),
      });

    it('a body past the budget, announced or arriving, is refused with 429 while slow bodies are held; others are not', async () => {
      const airline = await partnerToken(server, 'airline');
      const path = new URL(object).pathname;
      // Announced by Content-Length: counted at once, however slowly it comes.
      const announced = hold(server, airline, path, 800, 10);
      const refused = await until(429, () => patchWith('airline', 300));
      expect(refused.headers.get('retry-after')).to.equal('1');
      await expectApiError(refused, 429, /limits\.perCaller\.bodyBytesInFlight/);
      // Room for a smaller one; another partner's bodies count apart.
      expect((await patchWith('airline', 100)).status).to.not.equal(429);
      expect((await patchWith('handler', 900)).status).to.not.equal(429);
      announced.finish();
      await announced.answered;

      // Without Content-Length: counted as it arrives.
      const chunked = hold(server, airline, path, 'chunked', 100);
      expect((await patchWith('airline', 300)).status).to.not.equal(429);
      chunked.send(800);
      expect((await until(429, () => patchWith('airline', 300))).status).to.equal(429);
      chunked.finish();
      await chunked.answered;
      expect((await patchWith('airline', 900)).status).to.not.equal(429);
    });
  });

  describe('JSON-LD bodies at the jsonld.js worker per caller (limits.perCaller.jsonLdDocuments)', () => {
    let server: TestServer;
    let path: string;
    before(async () => {
      server = await startTestServer({
        limits: { perCaller: { jsonLdDocuments: 1 } },
        identityProvider: { clients: PARTNER_CLIENTS },
      });
      path = new URL(await createObject(server, piece())).pathname;
    });
    after(() => server.close());

    const patchWith = (who: PartnerName, body: unknown) =>
      as(server, who, path, {
        method: 'PATCH',
        headers: { 'Content-Type': 'application/ld+json' },
        body: JSON.stringify(body),
      });
    /** A body the fast reader takes (no Change in it: 400), so the probes themselves never reach the worker. */
    const plain = { '@id': 'https://x.example/a', 'https://x.example/p': 'v' };

    it("while one of its bodies keeps the worker busy, the caller's next body is refused with 429 before it is read; others are not", async () => {
      // Slow in jsonld.js (seconds), which the fast reader leaves to it.
      const slow = patchWith('airline', typeScopedNodes(12_000));
      const refused = await until(429, () => patchWith('airline', plain));
      expect(refused.headers.get('retry-after')).to.equal('1');
      await expectApiError(refused, 429, /limits\.perCaller\.jsonLdDocuments/);
      // Another partner's body is read as ever (no Change in it: 400, not 429).
      expect((await patchWith('handler', plain)).status).to.equal(400);
      expect((await slow).status).to.not.equal(429);
      expect((await patchWith('airline', plain)).status).to.equal(400);
    });
  });

  describe('the SPARQL queue (sparql.maxWaiting, sparql.maxWaitingPerCaller)', () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer({
        sparql: { timeBudgetMillis: 2000, openToPartners: true, maxWaiting: 3, maxWaitingPerCaller: 2 },
        identityProvider: { clients: PARTNER_CLIENTS },
      });
      const object = await createObject(server, { ...piece(30), 'cargo:goodsDescription': 'seen' });
      await grant(server, authorization(partner('airline'), [object], ['Read']));
      // The replica holds the store before the queries below are timed.
      expect((await sparql(server, 'holder', QUICK)).status).to.equal(200);
    });
    after(() => server.close());

    it('bounds what one caller may have waiting (429) and what all may (503), each with Retry-After', async () => {
      const holder = [sparql(server, 'holder', SLOW), sparql(server, 'holder', SLOW), sparql(server, 'holder', SLOW)];
      // One runs, two wait: the holder's third is past its own share...
      const settled = await Promise.race([
        Promise.all(holder),
        new Promise((resolve) => setTimeout(resolve, 500, 'waiting')),
      ]);
      expect(settled).to.equal('waiting');
      const own = await until(429, () => sparql(server, 'holder', SLOW));
      expect(own.headers.get('retry-after')).to.equal('5');
      await expectApiError(own, 429, /sparql\.maxWaitingPerCaller/);
      // ...another caller's query still has a place (the third), a fourth has none.
      const airline = sparql(server, 'airline', QUICK);
      await new Promise((resolve) => setTimeout(resolve, 200));
      const full = await sparql(server, 'handler', QUICK);
      expect(full.headers.get('retry-after')).to.equal('5');
      await expectApiError(full, 503, /too many SPARQL queries are waiting/);
      expect((await airline).status).to.equal(200);
      await Promise.all(holder);
    });

    it("takes callers in turns: one caller's queue of slow queries does not hold another's query behind all of it", async () => {
      const finished: string[] = [];
      const timed = (name: string, answer: Promise<Response>) =>
        answer.then(async (res) => {
          await res.arrayBuffer();
          finished.push(name);
        });
      const holder = [0, 1, 2].map((i) => timed(`holder ${i}`, sparql(server, 'holder', SLOW)));
      // The holder's three are in (one runs, two wait) before the airline asks.
      await new Promise((resolve) => setTimeout(resolve, 300));
      const airline = timed('airline', sparql(server, 'airline', QUICK));
      await Promise.all([...holder, airline]);
      // First come, first served would answer the airline last; in turns it goes right after the query running.
      expect(finished.indexOf('airline')).to.be.lessThan(finished.indexOf('holder 2'));
      expect(finished.indexOf('airline')).to.be.lessThan(2);
    });
  });
});
