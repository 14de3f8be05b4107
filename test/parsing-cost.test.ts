import { expect } from 'chai';
import { DEFAULTS } from '../src/config.js';
import { HttpError } from '../src/errors.js';
import { JsonLdFallback } from '../src/rdf/jsonld-fallback.js';
import { parseBody } from '../src/rdf/parse.js';
import { CARGO } from '../src/rdf/vocab.js';
import { expectApiError } from './support/api-error.js';
import { createObject } from './support/events.js';
import { startTestServer, type TestServer } from './support/server.js';

/**
 * The body found freezing the server: an inline @context of `terms` terms, each with an empty
 * scoped context (jsonld.js processes each against all the terms before it: 15 s for 4,000).
 */
function scopedContextBomb(terms: number): Record<string, unknown> {
  const context: Record<string, unknown> = { cargo: CARGO };
  for (let i = 0; i < terms; i++) context[`t${i}`] = { '@id': `http://x.example/${i}`, '@context': {} };
  return { '@context': context, '@type': 'cargo:Piece', t1: 'x' };
}

/**
 * Within every counted limit, but slow in jsonld.js: a type with a scoped context, applied anew
 * for each of `nodes` nodes over a context of 900 terms (3,000 nodes: ~2.3 s on a quiet machine,
 * well past the budgets below on any host; with 100 terms it was ~0.4 s, under a 500 ms budget).
 */
function typeScopedNodes(nodes: number): Record<string, unknown> {
  const context: Record<string, unknown> = { cargo: CARGO, Typed: { '@id': `${CARGO}Value`, '@context': {} } };
  for (let i = 0; i < 900; i++) context[`t${i}`] = `http://x.example/${i}`;
  return {
    '@context': context,
    '@type': 'cargo:Piece',
    'cargo:x': Array.from({ length: nodes }, () => ({ '@type': 'Typed', t1: 'y' })),
  };
}

const codeOf = async (body: unknown, options: Parameters<typeof parseBody>[2]): Promise<string> => {
  try {
    await parseBody(Buffer.from(JSON.stringify(body)), 'jsonld', options);
    return 'accepted';
  } catch (err) {
    expect(err).to.be.instanceOf(HttpError);
    return (err as HttpError).code;
  }
};

describe('JSON-LD parsing cost is bounded', () => {
  const base = 'https://server.example/logistics-objects/';

  describe('context size, counted before any reader runs', () => {
    it('the scoped-context body of 4,000 and 8,000 terms is refused as too large', async () => {
      expect(await codeOf(scopedContextBomb(4000), { base, limits: DEFAULTS.limits })).to.equal('context_too_large');
      expect(await codeOf(scopedContextBomb(8000), { base, limits: DEFAULTS.limits })).to.equal('context_too_large');
    });

    it('each @context counts its own terms and those of the contexts around it', async () => {
      const limits = { ...DEFAULTS.limits, contextTerms: 10 };
      const context = (n: number) =>
        Object.fromEntries(Array.from({ length: n }, (_, i) => [`t${i}`, `http://x.example/${i}/`]));
      const piece = { '@type': 'cargo:Piece' };
      // 1 + 9 terms at the top: 10.
      expect(await codeOf({ '@context': { cargo: CARGO, ...context(9) }, ...piece }, { base, limits })).to.equal(
        'accepted',
      );
      expect(await codeOf({ '@context': { cargo: CARGO, ...context(10) }, ...piece }, { base, limits })).to.equal(
        'context_too_large',
      );
      // 5 at the top, then an empty nested context that still has those 5 in scope: 10.
      const nested = (inner: Record<string, unknown>) => ({
        '@context': { cargo: CARGO, ...context(4) },
        ...piece,
        'cargo:x': { '@context': inner, 'cargo:y': 'z' },
      });
      expect(await codeOf(nested({}), { base, limits })).to.equal('accepted');
      expect(await codeOf(nested({ u: 'http://u.example/' }), { base, limits })).to.equal('context_too_large');
      // A scoped context in a term definition counts the same way; contexts side by side in an array add up.
      const scoped = (n: number) => ({
        '@context': { cargo: CARGO, ...context(n), s: { '@id': 'http://s.example/', '@context': {} } },
        ...piece,
      });
      expect(await codeOf(scoped(3), { base, limits })).to.equal('accepted');
      expect(await codeOf(scoped(4), { base, limits })).to.equal('context_too_large');
      expect(await codeOf({ '@context': [{ cargo: CARGO }, context(3)], ...piece }, { base, limits })).to.equal(
        'accepted',
      );
      expect(
        await codeOf({ '@context': [{ cargo: CARGO, ...context(3) }, context(3)], ...piece }, { base, limits }),
      ).to.equal('context_too_large');
      // Top-level nodes side by side count only their own contexts, which add up.
      const node = { '@context': { cargo: CARGO, ...context(2) }, ...piece };
      expect(await codeOf([node, node, node], { base, limits })).to.equal('accepted');
      expect(await codeOf([node, node, node, node], { base, limits })).to.equal('context_too_large');
    });

    it('the fast reader stops counting statements at the limit: 60,000 types in one node are refused at once', async () => {
      const body = {
        '@context': { c: 'http://c.example/' },
        '@type': Array.from({ length: 60_000 }, (_, i) => `c:${i.toString(36)}`),
      };
      expect(await codeOf(body, { base, limits: DEFAULTS.limits })).to.equal('too_many_triples');
    });
  });

  describe('jsonld.js runs on a worker thread with a time budget', () => {
    it('a document over the budget is stopped with jsonld_too_costly; the next one gets a fresh worker', async () => {
      const fallback = new JsonLdFallback(200);
      try {
        const options = { base, limits: DEFAULTS.limits, jsonLd: fallback };
        expect(await codeOf(typeScopedNodes(3000), options)).to.equal('jsonld_too_costly');
        // Outside the fast path (a @list), read by the new worker.
        const quads = await parseBody(
          Buffer.from(
            JSON.stringify({ '@context': { cargo: CARGO }, '@type': 'cargo:Piece', 'cargo:x': { '@list': [1, 2] } }),
          ),
          'jsonld',
          options,
        );
        expect(quads).to.have.length(6);
        // Errors of jsonld.js come back with their code.
        expect(await codeOf({ '@context': { cargo: CARGO, '@version': 2 }, '@type': 'cargo:Piece' }, options)).to.equal(
          'invalid_jsonld',
        );
      } finally {
        await fallback.close();
      }
    });

    it('documents wait for the worker in turn; after close they are refused with 503', async () => {
      const fallback = new JsonLdFallback(5000);
      const options = { base, limits: DEFAULTS.limits, jsonLd: fallback };
      const list = (n: number) => ({
        '@context': { cargo: CARGO },
        '@type': 'cargo:Piece',
        'cargo:x': { '@list': Array.from({ length: n }, (_, i) => i) },
      });
      const counts = await Promise.all(
        [1, 2, 3, 4].map(
          async (n) => (await parseBody(Buffer.from(JSON.stringify(list(n))), 'jsonld', options)).length,
        ),
      );
      expect(counts).to.deep.equal([4, 6, 8, 10]);
      await fallback.close();
      expect(await codeOf(list(1), options)).to.equal('jsonld_busy');
    });
  });

  describe('over HTTP: hostile bodies get 400 while the server keeps answering', () => {
    let server: TestServer;
    let object: string;
    before(async () => {
      server = await startTestServer({ limits: { jsonLdMillis: 500 } });
      object = await createObject(server, 'cargo:Piece');
    });
    after(() => server.close());

    const send = (path: string, method: string, body: unknown) =>
      server.request(path, {
        method,
        headers: { 'Content-Type': 'application/ld+json' },
        body: JSON.stringify(body),
        agent: 'other',
      });

    it('PATCH and event POSTs with the scoped-context body from a partner: 400 naming the context; GET / answers meanwhile', async () => {
      const quads = server.running.embedded!.index.size;
      const hostile = [
        send(object, 'PATCH', scopedContextBomb(4000)),
        send(object, 'PATCH', scopedContextBomb(8000)),
        send('/logistics-events', 'POST', scopedContextBomb(8000)),
      ];
      const gets = await Promise.all([1, 2, 3].map(() => server.request('/')));
      for (const get of gets) expect(get.status).to.equal(200);
      for (const res of await Promise.all(hostile)) await expectApiError(res, 400, /too many terms/);
      expect(server.running.embedded!.index.size).to.equal(quads);
    });

    it('a body that passes the counts but is slow in jsonld.js is stopped at the budget; GET / is answered before it', async () => {
      const order: string[] = [];
      const hostile = send(object, 'PATCH', typeScopedNodes(3000)).then((res) => {
        order.push('hostile');
        return res;
      });
      // Sent once the hostile body is on the worker: the request thread is free to answer it.
      await new Promise((resolve) => setTimeout(resolve, 100));
      const get = await server.request('/');
      order.push('get');
      expect(get.status).to.equal(200);
      await expectApiError(await hostile, 400, /took longer than 500 ms/);
      expect(order).to.deep.equal(['get', 'hostile']);
      // The server still reads documents that need jsonld.js.
      const res = await send(object, 'PATCH', {
        '@context': { cargo: CARGO },
        '@type': 'cargo:Piece',
        'cargo:x': { '@list': [1] },
      });
      await expectApiError(res, 400, /Change/);
    });
  });
});
