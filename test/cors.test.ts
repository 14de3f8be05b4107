import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import type { BrowserContext } from 'playwright-core';
import { ERROR_TITLES } from '../src/errors.js';
import { add, change, createObject, str } from './support/changes.js';
import { openChromium } from './support/chromium.js';
import { startTestServer, type TestServer } from './support/server.js';

/** The origin of a partner's web application (nothing needs to listen there: requests are sent from Node). */
const PARTNER = 'https://tracking.partner.example';

const preflight = (server: TestServer, path: string, origin: string, method = 'PATCH') =>
  fetch(`${server.url}${path}`, {
    method: 'OPTIONS',
    headers: {
      Origin: origin,
      'Access-Control-Request-Method': method,
      'Access-Control-Request-Headers': 'authorization, content-type',
    },
  });

/** Headers a client of the API reads, which a page can read only if they are exposed. */
const EXPOSED = ['location', 'type', 'revision', 'latest-revision', 'www-authenticate', 'x-request-id', 'retry-after'];

const corsHeaders = (res: Response) => [...res.headers.keys()].filter((name) => name.startsWith('access-control-'));

/** The names in a comma-separated header, lowercased. */
const names = (value: string | null) => (value ?? '').split(',').map((name) => name.trim().toLowerCase());

describe('CORS', function () {
  this.timeout(60_000);

  describe('off by default', () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer();
    });
    after(() => server.close());

    it('answers as before: a preflight needs a token, no answer carries Access-Control-* headers', async () => {
      const object = await createObject(server);
      const res = await preflight(server, new URL(object).pathname, PARTNER);
      expect(res.status).to.equal(401);
      expect(corsHeaders(res)).to.deep.equal([]);
      const read = await server.request(object, { headers: { Origin: PARTNER } });
      expect(read.status).to.equal(200);
      expect(corsHeaders(read)).to.deep.equal([]);
      expect(read.headers.get('vary')).to.equal('Accept');
    });
  });

  describe('with allowed origins', () => {
    let server: TestServer;
    let object: string;
    let path: string;
    before(async () => {
      server = await startTestServer({ http: { cors: { allowedOrigins: [PARTNER, 'http://localhost:5173'] } } });
      object = await createObject(server);
      path = new URL(object).pathname;
    });
    after(() => server.close());

    it('answers a preflight from an allowed origin without a token; the request itself still needs one', async () => {
      const res = await preflight(server, path, PARTNER);
      expect(res.status).to.equal(204);
      expect(res.headers.get('access-control-allow-origin')).to.equal(PARTNER);
      const methods = names(res.headers.get('access-control-allow-methods'));
      expect(methods).to.include.members(['get', 'head', 'post', 'patch', 'delete']);
      const headers = names(res.headers.get('access-control-allow-headers'));
      expect(headers).to.include.members(['authorization', 'content-type', 'content-encoding', 'idempotency-key']);
      expect(Number(res.headers.get('access-control-max-age'))).to.be.greaterThan(0);
      expect(res.headers.get('access-control-allow-credentials')).to.equal(null);
      expect(names(res.headers.get('vary'))).to.include('origin');
      // Not a route of its own: a preflight to any path is answered alike.
      expect((await preflight(server, '/no/such/path', 'http://localhost:5173', 'POST')).status).to.equal(204);

      const withoutToken = { Origin: PARTNER, 'Content-Type': 'application/ld+json' };
      expect((await fetch(object, { method: 'PATCH', headers: withoutToken, body: '{}' })).status).to.equal(401);
      // An OPTIONS that is not a preflight is an API request as before.
      expect((await fetch(object, { method: 'OPTIONS', headers: { Origin: PARTNER } })).status).to.equal(401);
    });

    it('refuses a preflight from another origin with 403 and no CORS headers', async () => {
      for (const origin of ['https://evil.example', 'https://tracking.partner.example:8443', 'null']) {
        const res = await preflight(server, path, origin);
        expect(res.status, origin).to.equal(403);
        expect(corsHeaders(res), origin).to.deep.equal([]);
        expect(res.headers.get('vary')).to.equal('Origin');
      }
    });

    it('lets an allowed origin read answers of the fast path and the app, errors too, and their headers', async () => {
      const token = await server.token();
      // Its body cached and the token verified: the next GET is answered on the fast path.
      await server.request(object);
      const answers = {
        fastPathGet: await server.request(object, { headers: { Origin: PARTNER } }),
        appGet: await server.request(`${object}?revision=1`, { headers: { Origin: PARTNER } }),
        unauthenticated: await fetch(object, { headers: { Origin: PARTNER } }),
        notFound: await server.request('/logistics-objects/missing', { headers: { Origin: PARTNER } }),
        badRequest: await fetch(object, {
          method: 'PATCH',
          headers: { Origin: PARTNER, Authorization: `Bearer ${token}`, 'Content-Type': 'application/ld+json' },
          body: '{',
        }),
      };
      for (const [name, res] of Object.entries(answers)) {
        expect(res.headers.get('access-control-allow-origin'), name).to.equal(PARTNER);
        expect(names(res.headers.get('vary')), name).to.include('origin');
        expect(names(res.headers.get('access-control-expose-headers')), name).to.include.members(EXPOSED);
      }
      expect(answers.fastPathGet.status).to.equal(200);
      expect(answers.fastPathGet.headers.get('vary')).to.equal('Accept, Origin');
      expect(answers.unauthenticated.status).to.equal(401);
      expect(answers.notFound.status).to.equal(404);
      expect(answers.badRequest.status).to.equal(400);
    });

    it('adds no Access-Control-* headers to answers without Origin or to other origins', async () => {
      const plain = await server.request(object);
      expect(corsHeaders(plain)).to.deep.equal([]);
      expect(plain.headers.get('vary')).to.equal('Accept');
      const other = await server.request(object, { headers: { Origin: 'https://evil.example' } });
      expect(other.status).to.equal(200);
      expect(corsHeaders(other)).to.deep.equal([]);
      expect(other.headers.get('vary')).to.equal('Accept, Origin');
    });
  });

  describe('with any origin (*)', () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer({ http: { cors: { allowedOrigins: ['*'] } } });
    });
    after(() => server.close());

    it('allows every origin with `*`, which needs no Vary: Origin', async () => {
      const object = await createObject(server);
      const res = await preflight(server, new URL(object).pathname, 'https://anyone.example');
      expect(res.status).to.equal(204);
      expect(res.headers.get('access-control-allow-origin')).to.equal('*');
      expect(res.headers.get('vary')).to.equal(null);
      const read = await server.request(object, { headers: { Origin: 'https://anyone.example' } });
      expect(read.headers.get('access-control-allow-origin')).to.equal('*');
      expect(read.headers.get('vary')).to.equal('Accept');
    });
  });

  describe('in a browser (headless Chromium)', () => {
    let server: TestServer;
    let browser: { context: BrowserContext; close(): Promise<void> };
    let allowedPage: Server;
    let otherPage: Server;

    /** A page server on a port of its own: another origin than the API's. */
    const pageServer = async (): Promise<Server> => {
      const html = '<!doctype html><title>tracking</title><p>partner page';
      const pages = createServer((_req, res) => res.writeHead(200, { 'Content-Type': 'text/html' }).end(html));
      await new Promise<void>((resolve) => pages.listen(0, '127.0.0.1', resolve));
      return pages;
    };
    const originOf = (pages: Server) => `http://127.0.0.1:${(pages.address() as AddressInfo).port}`;

    before(async () => {
      allowedPage = await pageServer();
      otherPage = await pageServer();
      server = await startTestServer({ http: { cors: { allowedOrigins: [originOf(allowedPage)] } } });
      browser = await openChromium();
    });
    after(async () => {
      await browser?.close();
      await server?.close();
      allowedPage?.close();
      otherPage?.close();
    });

    /** What a page's script saw of each call, or the error its fetch failed with. */
    interface PageOutcome {
      read: { status: number; latest: string | null; requestId: string | null; type: string } | string;
      patched: { status: number; location: string | null } | string;
      withoutToken: { status: number; authenticate: string | null; title: string } | string;
    }

    /** Runs in the page: reads the object, PATCHes it with the token, and reads the error of a call without one. */
    const callFromPage = async (pages: Server, object: string): Promise<PageOutcome> => {
      const page = await browser.context.newPage();
      try {
        await page.goto(originOf(pages));
        const body = JSON.stringify(change(object, 1, [add(object, 'goodsDescription', str('from the browser'))]));
        return await page.evaluate(
          async ({ object, token, body }) => {
            const attempt = <T>(call: () => Promise<T>) => call().catch((err: unknown) => String(err));
            const bearer = { Authorization: `Bearer ${token}` };
            return {
              read: await attempt(async () => {
                const res = await fetch(object, { headers: { ...bearer, Accept: 'application/ld+json' } });
                const type = ((await res.json()) as { '@type': string })['@type'];
                const { status, headers } = res;
                return { status, latest: headers.get('Latest-Revision'), requestId: headers.get('X-Request-Id'), type };
              }),
              patched: await attempt(async () => {
                const headers = { ...bearer, 'Content-Type': 'application/ld+json' };
                const res = await fetch(object, { method: 'PATCH', headers, body });
                return { status: res.status, location: res.headers.get('Location') };
              }),
              withoutToken: await attempt(async () => {
                const res = await fetch(object);
                const title = ((await res.json()) as { 'api:hasTitle': string })['api:hasTitle'];
                return { status: res.status, authenticate: res.headers.get('WWW-Authenticate'), title };
              }),
            };
          },
          { object, token: await server.token(), body },
        );
      } finally {
        await page.close();
      }
    };

    it('a page of an allowed origin reads an object, PATCHes it with a bearer token and reads the errors', async () => {
      const object = await createObject(server);
      const outcome = await callFromPage(allowedPage, object);
      expect(outcome.read).to.deep.include({ status: 200, latest: '1', type: 'cargo:Piece' });
      expect(outcome.read).to.have.property('requestId').that.is.a('string');
      expect(outcome.patched).to.have.property('status').that.is.oneOf([201, 204]);
      expect(outcome.patched).to.have.property('location').that.is.a('string');
      expect(outcome.withoutToken).to.deep.equal({ status: 401, authenticate: 'Bearer', title: ERROR_TITLES[401] });
      expect((await server.request(object, { method: 'HEAD' })).headers.get('latest-revision')).to.equal('2');
    });

    it('the same page from an origin not allowed is refused by the browser, and its PATCH never sent', async () => {
      const object = await createObject(server);
      const outcome = await callFromPage(otherPage, object);
      const refused = 'TypeError: Failed to fetch';
      expect(outcome).to.deep.equal({ read: refused, patched: refused, withoutToken: refused });
      expect((await server.request(object, { method: 'HEAD' })).headers.get('latest-revision')).to.equal('1');
    });
  });
});
