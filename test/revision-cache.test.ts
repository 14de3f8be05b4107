import { expect } from 'chai';
import { add, change, createObject, dbl, del, patch, piece, str, XSD } from './support/changes.js';
import { startTestServer, type TestServer } from './support/server.js';
import type { Quad } from '../src/rdf/terms.js';

const sorted = (
  triples: readonly {
    subject: { value: string };
    predicate: { value: string };
    object: { termType: string; value: string };
  }[],
) => triples.map((t) => `${t.subject.value} ${t.predicate.value} ${JSON.stringify(t.object)}`).sort();

describe('parsed revisions kept in memory', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  it('a revision written by a change is kept exactly as the store holds it, whatever lexical forms the Change used', async () => {
    const object = await createObject(server);
    const values = [
      dbl('+25.000'),
      { datatype: `${XSD}boolean`, value: '1' },
      { datatype: `${XSD}decimal`, value: '12.50' },
      { datatype: `${XSD}dateTime`, value: '2026-01-02T03:04:05.500Z' },
    ];
    const res = await patch(
      server,
      object,
      change(object, 1, [
        del(object, 'remarks', str('Books')),
        add(object, 'remarks', str('Pens')),
        add(object, 'https://example.org/ns#values', ...values),
      ]),
    );
    expect(res.status).to.equal(201);
    const { objects } = server.running.services;
    const latest = objects.index.latest(objects.index.get(object)!);
    expect(latest.number).to.equal(2);
    const kept = await objects.triples(latest);
    const stored = await server.running.store.graphTriples(latest.graph);
    expect(sorted(kept)).to.deep.equal(sorted(stored));
  });

  /** The graphs `server`'s store was asked for while `run` ran. */
  async function graphsRead(run: () => Promise<void>): Promise<string[]> {
    const store = server.running.store;
    const read: string[] = [];
    const graphTriples = store.graphTriples;
    store.graphTriples = (graph: string) => {
      read.push(graph);
      return graphTriples.call(store, graph);
    };
    try {
      await run();
    } finally {
      store.graphTriples = graphTriples;
    }
    return read;
  }

  /** Revision 1 as kept in memory and as the store holds it. */
  async function firstRevision(
    object: string,
  ): Promise<{ kept: readonly Quad[]; stored: readonly Quad[]; graph: string }> {
    const { objects } = server.running.services;
    const first = objects.index.latest(objects.index.get(object)!);
    expect(first.number).to.equal(1);
    return {
      kept: await objects.triples(first),
      stored: await server.running.store.graphTriples(first.graph),
      graph: first.graph,
    };
  }

  it('an object created with literals in the forms the store keeps is kept as created: its first change reads nothing from the store', async () => {
    const body = piece();
    (body['cargo:grossWeight'] as Record<string, unknown>)['cargo:numericalValue'] = {
      '@type': 'xsd:double',
      '@value': '20',
    };
    const object = await createObject(server, body);
    let first: Awaited<ReturnType<typeof firstRevision>> | undefined;
    let res: Response | undefined;
    const read = await graphsRead(async () => {
      first = await firstRevision(object);
      res = await patch(server, object, change(object, 1, [del(object, 'remarks', str('Books'))]));
    });
    expect(res!.status).to.equal(201);
    // Read once, by firstRevision itself, to compare.
    expect(read.filter((g) => g === first!.graph)).to.have.length(1);
    expect(sorted(first!.kept)).to.deep.equal(sorted(first!.stored));
  });

  it('one created with a literal the store writes in another form ("20.0" as "20"), or with a triple Turtle states twice, is kept as the store holds it', async () => {
    const object = await createObject(server, piece());
    const fromJsonLd = await firstRevision(object);
    expect(sorted(fromJsonLd.kept)).to.deep.equal(sorted(fromJsonLd.stored));
    expect(fromJsonLd.kept.map((t) => t.object.value))
      .to.include('20')
      .and.not.include('20.0');
    const turtle = `@prefix cargo: <https://onerecord.iata.org/ns/cargo#> .
      [] a cargo:Piece ; cargo:remarks "twice", "twice" ; cargo:coload false .`;
    const res = await server.request('/logistics-objects', {
      method: 'POST',
      headers: { 'Content-Type': 'text/turtle' },
      body: turtle,
    });
    expect(res.status, await res.clone().text()).to.equal(201);
    const fromTurtle = await firstRevision(res.headers.get('location')!);
    expect(sorted(fromTurtle.kept)).to.deep.equal(sorted(fromTurtle.stored));
    expect(fromTurtle.kept.filter((t) => t.object.value === 'twice')).to.have.length(1);
  });
});
