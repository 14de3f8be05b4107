import { expect } from 'chai';
import { startTestServer, postJsonLd, type TestServer } from './support/server.js';

const PIECE = {
  '@context': { cargo: 'https://onerecord.iata.org/ns/cargo#' },
  '@type': 'cargo:Piece',
  'cargo:goodsDescription': 'Books',
  'cargo:grossWeight': {
    '@type': 'cargo:Value',
    'cargo:unit': { '@id': 'https://onerecord.iata.org/ns/code-lists/MeasurementUnitCode#KGM' },
    'cargo:numericalValue': { '@type': 'http://www.w3.org/2001/XMLSchema#double', '@value': '20.0' },
  },
};

describe('Logistics Objects: create and read', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  it('POST creates an object: 201 with Location and the most specific Type', async () => {
    const res = await postJsonLd(server, '/logistics-objects', PIECE);
    expect(res.status).to.equal(201);
    expect(res.headers.get('location')).to.match(
      new RegExp(`^${server.url.replace(/[.]/g, '\\.')}/logistics-objects/[0-9a-f-]{36}$`),
    );
    expect(res.headers.get('type')).to.equal('https://onerecord.iata.org/ns/cargo#Piece');
  });

  it('GET returns the object with revision headers and body properties', async () => {
    const created = await postJsonLd(server, '/logistics-objects', PIECE);
    const res = await server.request(created.headers.get('location')!);
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.equal('application/ld+json; version=2.3.0');
    expect(res.headers.get('content-language')).to.equal('en-US');
    expect(res.headers.get('revision')).to.equal('1');
    expect(res.headers.get('latest-revision')).to.equal('1');
    expect(res.headers.get('type')).to.equal('https://onerecord.iata.org/ns/cargo#Piece');
    expect(res.headers.get('last-modified')).to.match(
      /^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/,
    );
    const body = (await res.json()) as Record<string, unknown>;
    expect(body['@id']).to.equal(created.headers.get('location'));
    expect(body['api:hasRevision']).to.equal(1);
    expect(body['api:hasLatestRevision']).to.equal(1);
    const weight = body['cargo:grossWeight'] as Record<string, unknown>;
    expect(weight['@id']).to.match(/^internal:/);
    expect(weight['cargo:unit']).to.deep.equal({
      '@id': 'https://onerecord.iata.org/ns/code-lists/MeasurementUnitCode#KGM',
    });
  });

  it('non-internal callers may not create objects (403)', async () => {
    const res = await postJsonLd(server, '/logistics-objects', PIECE, 'other');
    expect(res.status).to.equal(403);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body['@type']).to.equal('api:Error');
  });
});
