import { expect } from 'chai';
import { Parser } from 'n3';
import { namedNode, literal, quad, type Quad } from '../src/rdf/terms.js';
import { CARGO } from '../src/rdf/vocab.js';
import { jsonLdToQuads, ntLines } from './support/rdf-compare.js';
import { startTestServer, postJsonLd, type TestServer } from './support/server.js';

const SHIPMENT = (pieceIri: string) => ({
  '@context': { cargo: CARGO },
  '@type': 'cargo:Shipment',
  'cargo:goodsDescription': 'Books',
  'cargo:pieces': { '@id': pieceIri },
});

const compact = (d: Date) =>
  d
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Adds a revision through the domain's write path (PATCH arrives with change requests). */
async function addRevision(server: TestServer, iri: string, description: string): Promise<void> {
  const objects = server.running.services.objects;
  const entry = (await objects.index.find(iri))!;
  const latest = objects.index.latest(entry);
  const previous = await objects.triples(latest);
  const removed = previous.filter((t) => t.predicate.value === `${CARGO}goodsDescription`);
  const added = [quad(namedNode(iri), namedNode(`${CARGO}goodsDescription`), literal(description))];
  const triples: Quad[] = [...previous.filter((t) => t.predicate.value !== `${CARGO}goodsDescription`), ...added];
  const { store } = server.running;
  const tx = store.begin();
  objects.addRevision(tx, entry, objects.claimNextRevision(tx, entry)!, triples, server.running.services.holder, {
    previous,
    added,
    removed,
  });
  await store.commit(tx);
}

describe('Logistics Objects: reading revisions, formats and links', () => {
  let server: TestServer;
  let pieceIri: string;
  let shipmentIri: string;
  /** When revision n was created, from the server's own index. */
  const createdAt = async (n: number) => {
    const { index } = server.running.services.objects;
    return (await index.revision((await index.find(shipmentIri))!, n))!.createdAt;
  };

  before(async () => {
    server = await startTestServer();
    pieceIri = (
      await postJsonLd(server, '/logistics-objects', {
        '@context': { cargo: CARGO },
        '@type': 'cargo:Piece',
        'cargo:goodsDescription': 'a piece',
      })
    ).headers.get('location')!;
    shipmentIri = (await postJsonLd(server, '/logistics-objects', SHIPMENT(pieceIri))).headers.get('location')!;
    // Revisions over a second apart, so the compact (second-precision) `at` form can address each.
    for (const description of ['second', 'third']) {
      await sleep(1100);
      await addRevision(server, shipmentIri, description);
    }
  });
  after(() => server.close());

  const description = async (res: Response) =>
    ((await res.json()) as Record<string, unknown>)['cargo:goodsDescription'];

  it('serves the latest revision by default, with Revision and Latest-Revision', async () => {
    const res = await server.request(shipmentIri);
    expect(res.headers.get('revision')).to.equal('3');
    expect(res.headers.get('latest-revision')).to.equal('3');
    expect(await description(res)).to.equal('third');
  });

  it('revision=N returns that revision, with api:hasRevision and api:hasLatestRevision', async () => {
    const res = await server.request(`${shipmentIri}?revision=1`);
    expect(res.status).to.equal(200);
    expect(res.headers.get('revision')).to.equal('1');
    expect(res.headers.get('latest-revision')).to.equal('3');
    const body = (await res.json()) as Record<string, unknown>;
    expect(body['cargo:goodsDescription']).to.equal('Books');
    expect(body['api:hasRevision']).to.equal(1);
    expect(body['api:hasLatestRevision']).to.equal(3);
  });

  it('revision beyond the latest is 404, a malformed one 400', async () => {
    expect((await server.request(`${shipmentIri}?revision=9`)).status).to.equal(404);
    const bad = await server.request(`${shipmentIri}?revision=zero`);
    expect(bad.status).to.equal(400);
    const body = (await bad.json()) as { 'api:hasErrorDetail': { 'api:hasProperty': { '@value': string } }[] };
    expect(body['api:hasErrorDetail'][0]['api:hasProperty']['@value']).to.equal('revision');
  });

  it('at= in the compact form selects the revision valid then, and links carry ?at=', async () => {
    const at = compact(new Date((await createdAt(2)).getTime() + 1000));
    const res = await server.request(`${shipmentIri}?at=${at}`);
    expect(res.status).to.equal(200);
    expect(res.headers.get('revision')).to.equal('2');
    const body = (await res.json()) as Record<string, { '@id': string }>;
    expect(body['cargo:goodsDescription']).to.equal('second');
    expect(body['cargo:pieces']['@id']).to.equal(`${pieceIri}?at=${at}`);
  });

  it('at= in RFC 3339 form works too', async () => {
    await sleep(5);
    let res = await server.request(`${shipmentIri}?at=${encodeURIComponent(new Date(Date.now() - 1).toISOString())}`);
    expect(res.headers.get('revision')).to.equal('3');
    res = await server.request(
      `${shipmentIri}?at=${encodeURIComponent(new Date((await createdAt(2)).getTime() + 1).toISOString().replace('Z', '+00:00'))}`,
    );
    expect(res.headers.get('revision')).to.equal('2');
  });

  it('at= in the future is 400, before creation 404, malformed 400', async () => {
    expect((await server.request(`${shipmentIri}?at=${compact(new Date(Date.now() + 3_600_000))}`)).status).to.equal(
      400,
    );
    expect((await server.request(`${shipmentIri}?at=20000101T000000Z`)).status).to.equal(404);
    expect((await server.request(`${shipmentIri}?at=yesterday`)).status).to.equal(400);
  });

  it('embedded=true inlines linked objects of this server with their revision numbers', async () => {
    const res = await server.request(`${shipmentIri}?embedded=true`);
    const body = (await res.json()) as Record<string, Record<string, unknown>>;
    expect(body['cargo:pieces']['@id']).to.equal(pieceIri);
    expect(body['cargo:pieces']['cargo:goodsDescription']).to.equal('a piece');
    expect(body['cargo:pieces']['api:hasRevision']).to.equal(1);
    expect(body['cargo:pieces']['api:hasLatestRevision']).to.equal(1);
  });

  it('serves Turtle and N-Triples by Accept, with the same triples as JSON-LD', async () => {
    for (const accept of ['text/turtle', 'application/n-triples']) {
      const res = await server.request(shipmentIri, { headers: { Accept: accept } });
      expect(res.status).to.equal(200);
      expect(res.headers.get('content-type')).to.equal(`${accept}; version=2.3.0`);
      const triples = new Parser({ format: accept === 'text/turtle' ? 'text/turtle' : 'application/n-triples' }).parse(
        await res.text(),
      );
      const values = triples.filter((t) => t.predicate.value === `${CARGO}goodsDescription`).map((t) => t.object.value);
      expect(values).to.deep.equal(['third']);
      expect(triples.some((t) => t.predicate.value.endsWith('#hasLatestRevision') && t.object.value === '3')).to.equal(
        true,
      );
    }
  });

  it('every format carries the same graph: plain, at=, embedded with at= and with revision=', async () => {
    const at = compact(new Date((await createdAt(2)).getTime() + 1000));
    for (const query of ['', `?at=${at}`, `?embedded=true&at=${at}`, '?embedded=true&revision=1', '?embedded=true']) {
      const fromJsonLd = ntLines(await jsonLdToQuads(await (await server.request(`${shipmentIri}${query}`)).json()));
      for (const format of ['text/turtle', 'application/n-triples']) {
        const res = await server.request(`${shipmentIri}${query}`, { headers: { Accept: format } });
        expect(ntLines(new Parser({ format }).parse(await res.text())), `${format} ${query}`).to.deep.equal(fromJsonLd);
      }
    }
  });

  it("embedded with at=: the embedded object's data sits on the ?at= IRI that links to it", async () => {
    const at = compact(new Date((await createdAt(2)).getTime() + 1000));
    const res = await server.request(`${shipmentIri}?embedded=true&at=${at}`, {
      headers: { Accept: 'application/n-triples' },
    });
    const triples = new Parser({ format: 'application/n-triples' }).parse(await res.text());
    const link = triples.find((t) => t.subject.value === shipmentIri && t.predicate.value === `${CARGO}pieces`)!.object
      .value;
    expect(link).to.equal(`${pieceIri}?at=${at}`);
    const description = triples.find(
      (t) => t.predicate.value === `${CARGO}goodsDescription` && t.object.value === 'a piece',
    );
    expect(description?.subject.value).to.equal(link);
    expect(triples.filter((t) => t.subject.value === pieceIri)).to.deep.equal([]);
  });

  it('Accept with a version echoes it; an unknown version gets the newest', async () => {
    let res = await server.request(shipmentIri, { headers: { Accept: 'application/ld+json; version=2.1.0' } });
    expect(res.headers.get('content-type')).to.equal('application/ld+json; version=2.1.0');
    res = await server.request(shipmentIri, { headers: { Accept: 'application/ld+json; version=2.0.0-dev' } });
    expect(res.headers.get('content-type')).to.equal('application/ld+json; version=2.3.0');
  });

  it('an Accept that no format satisfies is 406', async () => {
    const res = await server.request(shipmentIri, { headers: { Accept: 'image/png' } });
    expect(res.status).to.equal(406);
    expect(((await res.json()) as Record<string, unknown>)['@type']).to.equal('api:Error');
  });

  it('HEAD answers with the same headers and no body', async () => {
    const res = await server.request(shipmentIri, { method: 'HEAD' });
    expect(res.status).to.equal(200);
    expect(res.headers.get('revision')).to.equal('3');
    expect(res.headers.get('type')).to.equal(`${CARGO}Shipment`);
    expect(await res.text()).to.equal('');
  });

  it('an unknown id is 404 with an api:Error body', async () => {
    const res = await server.request('/logistics-objects/does-not-exist');
    expect(res.status).to.equal(404);
    expect(res.headers.get('content-language')).to.equal('en-US');
    const body = (await res.json()) as Record<string, unknown>;
    expect(body['@type']).to.equal('api:Error');
    expect(body['api:hasTitle']).to.equal('Resource not found');
  });

  it('another agent without a grant is refused with 403', async () => {
    const res = await server.request(shipmentIri, { agent: 'other' });
    expect(res.status).to.equal(403);
    expect(((await res.json()) as Record<string, unknown>)['api:hasTitle']).to.equal(
      'Not authorized to perform action',
    );
  });

  it('GET / returns the ServerInformation', async () => {
    const res = await server.request('/');
    expect(res.status).to.equal(200);
    expect(res.headers.get('last-modified')).to.be.a('string');
    const body = (await res.json()) as Record<string, unknown>;
    expect(body['@type']).to.equal('api:ServerInformation');
    expect(body['api:hasDataHolder']).to.deep.equal({ '@id': server.running.services.holder });
    expect(body['api:hasSupportedApiVersion']).to.include('2.3.0');
    expect(body['api:hasSupportedLanguage']).to.deep.equal(['en-US']);
    const holder = await server.request(server.running.services.holder);
    expect(holder.status).to.equal(200);
    expect(holder.headers.get('type')).to.equal(`${CARGO}Organization`);
  });
});
