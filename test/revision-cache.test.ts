import { expect } from 'chai';
import { add, change, createObject, dbl, del, patch, str, XSD } from './support/changes.js';
import { startTestServer, type TestServer } from './support/server.js';

const sorted = (triples: readonly { subject: { value: string }; predicate: { value: string }; object: { termType: string; value: string } }[]) =>
  triples.map((t) => `${t.subject.value} ${t.predicate.value} ${JSON.stringify(t.object)}`).sort();

describe('parsed revisions kept in memory', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  it('a revision written by a change is kept exactly as the store holds it, whatever lexical forms the Change used', async () => {
    const object = await createObject(server);
    const values = [dbl('+25.000'), { datatype: `${XSD}boolean`, value: '1' }, { datatype: `${XSD}decimal`, value: '12.50' }, { datatype: `${XSD}dateTime`, value: '2026-01-02T03:04:05.500Z' }];
    const res = await patch(server, object, change(object, 1, [del(object, 'remarks', str('Books')), add(object, 'remarks', str('Pens')), add(object, 'https://example.org/ns#values', ...values)]));
    expect(res.status).to.equal(201);
    const { objects } = server.running.services;
    const latest = objects.index.latest(objects.index.get(object)!);
    expect(latest.number).to.equal(2);
    const kept = await objects.triples(latest);
    const stored = await server.running.store.graphTriples(latest.graph);
    expect(sorted(kept)).to.deep.equal(sorted(stored));
  });
});
