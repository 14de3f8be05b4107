import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { add, change, createObject, patch, piece, str } from './support/changes.js';
import { eventJson, postEvent } from './support/events.js';
import { startTestServer, type TestServer } from './support/server.js';
import { shippedQueries } from '../src/domain/analytics/query-files.js';
import { authorization, delegate, grant, partner } from './support/access.js';

const run = promisify(execFile);
const CLI = fileURLToPath(new URL('../src/cli.js', import.meta.url));
const QUERIES = fileURLToPath(new URL('../../scripts/queries/', import.meta.url));
const CARGO = 'https://onerecord.iata.org/ns/cargo#';

type Row = Record<string, string>;

/** Runs `onerecord query <file>` against the server, as a user would, and returns the SPARQL JSON rows. */
async function query(server: TestServer, file: string): Promise<Row[]> {
  const { stdout } = await run(
    process.execPath,
    [CLI, 'query', `${QUERIES}${file}`, '--url', server.url, '--accept', 'application/sparql-results+json'],
    {
      env: { PATH: process.env.PATH, DATA_DIR: server.dataDir },
    },
  );
  const body = JSON.parse(stdout) as { results: { bindings: Record<string, { value: string }>[] } };
  return body.results.bindings.map((b) => Object.fromEntries(Object.entries(b).map(([k, v]) => [k, v.value])));
}

function weighing(kg: number, description: string): Record<string, unknown> {
  const body = piece();
  (body['cargo:grossWeight'] as Record<string, unknown>)['cargo:numericalValue'] = {
    '@type': 'xsd:double',
    '@value': String(kg),
  };
  return { ...body, 'cargo:goodsDescription': description };
}

describe('shipped analytics queries (scripts/queries, run with onerecord query)', function () {
  this.timeout(60_000);
  let server: TestServer;
  let pieceA: string;
  let pieceB: string;
  let pieceC: string;
  let first: string;
  let second: string;

  before(async () => {
    server = await startTestServer();
    pieceA = await createObject(server, weighing(20, 'A'));
    pieceB = await createObject(server, weighing(30, 'B'));
    pieceC = await createObject(server, weighing(5, 'C'));
    const shipment = (pieces: string[]) => ({
      '@context': { cargo: CARGO },
      '@type': 'cargo:Shipment',
      'cargo:pieces': pieces.map((p) => ({ '@id': p })),
    });
    first = await createObject(server, shipment([pieceA, pieceB]));
    second = await createObject(server, shipment([pieceC]));
    const changed = await patch(server, first, change(first, 1, [add(first, 'goodsDescription', str('two pieces'))]));
    expect(changed.status, await changed.text()).to.equal(201);
    for (const [object, code, day] of [
      [pieceA, 'DEP', '2024-05-01'],
      [pieceA, 'ARR', '2024-05-02'],
      [pieceB, 'DEP', '2024-05-01'],
      [pieceC, 'FOH', '2024-05-02'],
    ]) {
      const res = await postEvent(server, object, eventJson({ code, eventDate: `${day}T10:00:00Z` }));
      expect(res.status, await res.text()).to.equal(201);
    }
  });
  after(() => server.close());

  it('ships the five queries, each naming its view', () => {
    expect(shippedQueries().map((q) => [q.name, q.view])).to.deep.equal([
      ['changed-last-24h', 'revisions'],
      ['delegations-per-partner', 'audit'],
      ['events-per-code-per-day', 'events'],
      ['pieces-without-departure', 'events'],
      ['shipments-gross-weight', 'latest'],
    ]);
  });

  it('shipments-gross-weight: each shipment with its number of pieces and their total gross weight', async () => {
    const rows = await query(server, 'shipments-gross-weight.rq');
    expect(rows.map((r) => [r.shipment, r.pieces, r.unit, Number(r.totalGrossWeight)])).to.deep.equal([
      [first, '2', 'KGM', 50],
      [second, '1', 'KGM', 5],
    ]);
  });

  it('events-per-code-per-day: counts per day and code', async () => {
    const rows = await query(server, 'events-per-code-per-day.rq');
    expect(rows.map((r) => [r.day, r.code, r.events])).to.deep.equal([
      ['2024-05-01', 'DEP', '2'],
      ['2024-05-02', 'ARR', '1'],
      ['2024-05-02', 'FOH', '1'],
    ]);
  });

  it('pieces-without-departure: the pieces no DEP event was posted for', async () => {
    const rows = await query(server, 'pieces-without-departure.rq');
    expect(rows.map((r) => [r.piece, r.goodsDescription])).to.deep.equal([[pieceC, 'C']]);
  });

  it('changed-last-24h: every object written today, with its latest revision', async () => {
    const rows = await query(server, 'changed-last-24h.rq');
    const byObject = new Map(rows.map((r) => [r.object, r]));
    for (const object of [pieceA, pieceB, pieceC, first, second, server.running.services.holder])
      expect(byObject.has(object), object).to.equal(true);
    expect(byObject.get(first)).to.include({ latestRevision: '2', revisionsIn24h: '2' });
    expect(byObject.get(pieceA)).to.include({ latestRevision: '1', revisionsIn24h: '1' });
    expect(rows[0].object).to.equal(first); // most recent change first
  });

  it('delegations-per-partner: grants in force per organisation, with their delegations, objects and permissions', async () => {
    await delegate(server, 'holder', {
      permissions: ['GET_LOGISTICS_OBJECT', 'GET_LOGISTICS_EVENT'],
      for: partner('airline'),
      objects: [pieceA, pieceB],
    });
    await delegate(server, 'holder', {
      permissions: ['PATCH_LOGISTICS_OBJECT'],
      for: partner('airline'),
      objects: [first],
    });
    await grant(server, authorization(partner('handler'), [`${pieceC}/logistics-events`], ['Append']));
    await grant(server, authorization(undefined, [second], ['Read']));
    const revoked = await delegate(server, 'holder', {
      permissions: ['GET_LOGISTICS_OBJECT'],
      for: partner('trucker'),
      objects: [pieceA],
    });
    expect((await server.request(revoked, { method: 'DELETE' })).status).to.equal(204);

    const rows = await query(server, 'delegations-per-partner.rq');
    expect(
      rows.map((r) => [r.partner, r.delegations, r.grants, r.objects, r.permissions.split(' ').sort().join(' ')]),
    ).to.deep.equal([
      [partner('airline'), '2', '2', '3', 'GET_LOGISTICS_EVENT GET_LOGISTICS_OBJECT PATCH_LOGISTICS_OBJECT'],
      ['http://www.w3.org/ns/auth/acl#AuthenticatedAgent', '0', '1', '1', 'GET_LOGISTICS_OBJECT'],
      [partner('handler'), '0', '1', '1', 'POST_LOGISTICS_EVENT'],
    ]);
  });

  it("prints TSV by default and fails with the server's message", async () => {
    const { stdout } = await run(
      process.execPath,
      [CLI, 'query', `${QUERIES}shipments-gross-weight.rq`, '--url', server.url],
      { env: { PATH: process.env.PATH, DATA_DIR: server.dataDir } },
    );
    expect(stdout.split('\n')[0]).to.equal('?shipment\t?pieces\t?unit\t?totalGrossWeight');
    const failed = await run(
      process.execPath,
      [CLI, 'query', `${QUERIES}shipments-gross-weight.rq`, '--url', server.url, '--view', 'nothing'],
      { env: { PATH: process.env.PATH, DATA_DIR: server.dataDir } },
    ).catch((err: { code: number; stderr: string }) => err);
    expect(failed).to.include({ code: 1 });
    expect((failed as { stderr: string }).stderr).to.match(/^400: view must be one of/);
  });
});
