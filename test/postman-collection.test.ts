import { expect } from 'chai';
import { runCollection } from '../scripts/postman/run-collection.js';
import { startTestServer, type TestServer } from './support/server.js';

describe("IATA's public demo collection (Postman), run with newman", function () {
  this.timeout(120_000);
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  it('every request and saved example answers as the API prescribes (docs/conformance.md lists each and why)', async () => {
    const outcomes = await runCollection(server.url, await server.token());
    expect(outcomes).to.have.length(51);
    expect(outcomes.filter((o) => !o.pass).map((o) => `${o.name}: ${o.status} ${o.errors.join('; ')}`)).to.deep.equal(
      [],
    );
    const created = outcomes.filter((o) => o.status === 201).map((o) => o.name);
    expect(created).to.include.members([
      'Create logistics object / Example A1',
      'Update logistics object / Example C2',
      'Create a Logistics Event / Example A1',
    ]);
  });
});
