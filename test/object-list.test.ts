// GET /internal/logistics-objects: the operators' object list, its filters, order and paging. In the engine suite
// (TEST_STORE_BACKEND=sparql) it is answered by the engine (ObjectCatalog), with every object out of memory.
import { expect } from 'chai';
import { add, CARGO, change, createObject, patch, readJson, str } from './support/changes.js';
import { startTestServer, type TestServer } from './support/server.js';

interface Listed {
  iri: string;
  type: string;
  creator: string;
  revision: number;
  changedAt: string;
  changedBy: string;
}
interface ObjectListAnswer {
  total: number;
  types: Record<string, number>;
  objects: Listed[];
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the object list (GET /internal/logistics-objects)', () => {
  let server: TestServer;
  let pieces: string[];
  let shipment: string;
  let holder: string;
  let changedAfter: string;
  const list = async (query = '') =>
    (await readJson(server, `/internal/logistics-objects${query}`)) as unknown as ObjectListAnswer;

  before(async () => {
    server = await startTestServer();
    holder = server.running.services.holder;
    pieces = [];
    for (let i = 0; i < 3; i++) {
      pieces.push(await createObject(server, { '@context': { cargo: CARGO }, '@type': 'cargo:Piece' }));
      await sleep(5);
    }
    shipment = await createObject(server, { '@context': { cargo: CARGO }, '@type': 'cargo:Shipment' });
    await sleep(5);
    changedAfter = new Date().toISOString();
    await sleep(5);
    // The first piece changed last: it comes first.
    const changed = await patch(server, pieces[0], change(pieces[0], 1, [add(pieces[0], 'remarks', str('moved'))]));
    expect(changed.status).to.equal(201);
  });

  after(() => server.close());

  it('lists every object, most recently changed first, with its type, creator and latest revision', async () => {
    const all = await list();
    const organisations = all.objects.filter((o) => o.type === `${CARGO}Organization`).map((o) => o.iri);
    expect(all.total).to.equal(5);
    expect(all.objects.map((o) => o.iri)).to.deep.equal([pieces[0], shipment, pieces[2], pieces[1], ...organisations]);
    expect(all.objects[0]).to.include({ type: `${CARGO}Piece`, creator: holder, revision: 2, changedBy: holder });
    expect(all.objects[1]).to.include({ type: `${CARGO}Shipment`, creator: holder, revision: 1 });
    expect(Date.parse(all.objects[0].changedAt)).to.be.greaterThan(Date.parse(changedAfter));
    expect(all.types).to.deep.equal({ [`${CARGO}Piece`]: 3, [`${CARGO}Shipment`]: 1, [`${CARGO}Organization`]: 1 });
  });

  it('filters by type, part of the IRI (any case) and change time; the type counts stay those of all objects', async () => {
    const shipments = await list('?type=Shipment');
    expect(shipments.total).to.equal(1);
    expect(shipments.objects.map((o) => o.iri)).to.deep.equal([shipment]);
    expect(shipments.types[`${CARGO}Piece`]).to.equal(3);
    const id = pieces[1].split('/').pop()!.toUpperCase();
    expect((await list(`?id=${encodeURIComponent(id)}`)).objects.map((o) => o.iri)).to.deep.equal([pieces[1]]);
    const recent = await list(`?changed-after=${encodeURIComponent(changedAfter)}`);
    expect(recent.objects.map((o) => o.iri)).to.deep.equal([pieces[0]]);
    expect((await list(`?type=${encodeURIComponent(`${CARGO}Piece`)}&id=nothing-like-it`)).total).to.equal(0);
  });

  it('pages with skip and limit, counting all that match', async () => {
    const page = await list('?type=Piece&skip=1&limit=1');
    expect(page.total).to.equal(3);
    expect(page.objects.map((o) => o.iri)).to.deep.equal([pieces[2]]);
  });
});
