import { readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { expect } from 'chai';
import { Parser } from 'n3';
import { SHAPES_FILE, ShapeValidator } from '../src/shapes/validator.js';
import type { Quad } from '../src/rdf/terms.js';
import { api } from '../src/rdf/vocab.js';
import type { WriteTransaction } from '../src/store/transaction.js';
import {
  API,
  CARGO,
  XSD,
  add,
  asList,
  bool,
  change,
  createObject,
  del,
  errorCodes,
  patch,
  piece,
  readJson,
  statusOf,
  str,
  submit,
} from './support/changes.js';
import { delegationBody, partner, postDelegation } from './support/access.js';
import { eventJson, postEvent } from './support/events.js';
import { postJsonLd, startTestServer, type TestServer } from './support/server.js';

type Json = Record<string, unknown>;

/** The api:ErrorDetails of an api:Error body (or of a ChangeRequest's hasError) as plain values. */
function details(error: Json): { property: string; resource: string; message: string }[] {
  return asList(error['api:hasErrorDetail'] as Json | Json[]).map((d) => ({
    property: ((d['api:hasProperty'] as Json)?.['@value'] ?? d['api:hasProperty']) as string,
    resource: ((d['api:hasResource'] as Json)?.['@value'] ?? d['api:hasResource']) as string,
    message: d['api:hasMessage'] as string,
  }));
}

const invalidPiece = (): Json => ({
  '@context': { cargo: CARGO },
  '@type': 'cargo:Piece',
  'cargo:goodsDescription': ['Books', 'Magazines'],
  'cargo:grossWeight': { '@type': 'cargo:Value', 'cargo:numericalValue': 'abc' },
});

describe('Data-model validation on every write path', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  it('POST /logistics-objects: 400 with one hasErrorDetail per violation (property, focus node, message); nothing stored', async () => {
    const before = server.running.services.objects.index.size;
    const res = await postJsonLd(server, '/logistics-objects', invalidPiece());
    expect(res.status).to.equal(400);
    const body = (await res.json()) as Json;
    expect(body['@type']).to.equal('api:Error');
    const found = details(body);
    expect(found).to.have.length(2);
    const weight = found.find((d) => d.property === `${CARGO}numericalValue`)!;
    expect(weight.message).to.equal('cargo:grossWeight/cargo:numericalValue must be a number, got "abc"');
    const description = found.find((d) => d.property === `${CARGO}goodsDescription`)!;
    expect(description.message).to.equal('cargo:goodsDescription may appear at most once, got 2 values');
    expect(description.resource).to.match(new RegExp(`^${server.url}/logistics-objects/`));
    // The Value was sent as a blank node: its id given here means nothing to the client, so the
    // detail names the object the message's path starts from.
    expect(weight.resource).to.equal(description.resource);
    expect(server.running.services.objects.index.size).to.equal(before);
  });

  it('POST /logistics-objects: a nested Logistics Object that breaks a shape refuses the whole body', async () => {
    const before = server.running.services.objects.index.size;
    const res = await postJsonLd(server, '/logistics-objects', {
      '@context': { cargo: CARGO },
      '@type': 'cargo:Shipment',
      'cargo:goodsDescription': 'Shipment',
      'cargo:pieces': { '@type': 'cargo:Piece', 'cargo:coload': 'maybe' },
    });
    expect(res.status).to.equal(400);
    // The nested Piece is an object of its own: the message starts from it.
    const [detail] = details((await res.json()) as Json);
    expect(detail.message).to.equal('cargo:coload must be a boolean (true or false), got "maybe"');
    expect(detail.resource).to.match(new RegExp(`^${server.url}/logistics-objects/`));
    expect(server.running.services.objects.index.size).to.equal(before);
  });

  it('PATCH: a Change whose resulting revision breaks a shape is REQUEST_FAILED with one api:Error detail per violation; the object is unchanged', async () => {
    const object = await createObject(server);
    const before = await readJson(server, object);
    const request = await submit(
      server,
      object,
      change(object, 1, [
        add(object, 'goodsDescription', str('Books'), str('Magazines')),
        del(object, 'coload', bool(false)),
        add(object, 'coload', str('no')),
      ]),
    );
    const body = await readJson(server, request);
    expect((body['api:hasRequestStatus'] as Json)['@id']).to.equal(`${API}REQUEST_FAILED`);
    expect(errorCodes(body)).to.deep.equal(['422', '422']);
    expect(details(body['api:hasError'] as Json).map((d) => [d.property, d.resource])).to.have.deep.members([
      [`${CARGO}goodsDescription`, object],
      [`${CARGO}coload`, object],
    ]);
    expect(await readJson(server, object)).to.deep.equal(before);
  });

  it('PATCH: a Change that keeps the object valid is accepted', async () => {
    const object = await createObject(server);
    const request = await submit(
      server,
      object,
      change(object, 1, [add(object, 'goodsDescription', str('Magazines'))]),
    );
    expect(await statusOf(server, request)).to.equal('REQUEST_ACCEPTED');
  });

  it('PATCH: a Change document that breaks the API shapes is 400 (api:hasRevision must be >= 1)', async () => {
    const object = await createObject(server);
    const body = change(object, 1, [add(object, 'goodsDescription', str('x'))]);
    body['api:hasRevision'] = { '@type': `${XSD}integer`, '@value': '0' };
    const res = await patch(server, object, body);
    expect(res.status).to.equal(400);
    // A Change sent without @id has no IRI a detail could name: hasResource is left out, not a blank node label.
    expect(details((await res.json()) as Json).map((d) => [d.property, d.resource])).to.deep.equal([
      [`${API}hasRevision`, undefined],
    ]);
  });

  it('POST logistics-events: an event breaking a shape is 400; the bulk endpoint reports it for that event only', async () => {
    const object = await createObject(server);
    const bad = eventJson({ 'cargo:partialEventIndicator': 'maybe' });
    const res = await postEvent(server, object, bad);
    expect(res.status).to.equal(400);
    expect(details((await res.json()) as Json)[0].message).to.equal(
      'cargo:partialEventIndicator must be a boolean (true or false), got "maybe"',
    );
    expect((await postEvent(server, object, eventJson({ 'cargo:partialEventIndicator': false }))).status).to.equal(201);

    const bulk = await postJsonLd(server, '/logistics-events', {
      '@context': { cargo: CARGO },
      '@graph': [
        { ...eventJson(), '@context': undefined, 'cargo:eventFor': { '@id': object } },
        { ...bad, '@context': undefined, 'cargo:eventFor': { '@id': object } },
      ],
    });
    expect(bulk.status).to.equal(207);
    const text = await bulk.text();
    expect(text).to.include('cargo:partialEventIndicator must be a boolean');
    const result = JSON.parse(text) as Json;
    expect([result['api:hasTotalCreated'], result['api:hasTotalFailed']]).to.deep.equal([1, 1]);
  });

  it('POST /access-delegations: a body breaking the API shapes is 400 with one detail per violation; nothing stored', async () => {
    const object = await createObject(server);
    const body = {
      ...delegationBody({ permissions: ['GET_LOGISTICS_OBJECT'], for: partner('airline'), objects: [object] }),
      'api:hasDescription': ['one', 'two'],
      'api:expiresAt': 'tomorrow',
      'api:notifyRequestStatusChange': 'yes',
    };
    const res = await postDelegation(server, 'holder', body);
    expect(res.status).to.equal(400);
    const found = details((await res.json()) as Json);
    expect(found.map((d) => [d.property, d.message])).to.have.deep.members([
      [`${API}hasDescription`, 'api:hasDescription may appear at most once, got 2 values'],
      [`${API}expiresAt`, 'api:expiresAt must be an xsd:dateTime, got "tomorrow"'],
      [`${API}notifyRequestStatusChange`, 'api:notifyRequestStatusChange must be a boolean (true or false), got "yes"'],
    ]);
    const requests = (await (
      await server.request(`/action-requests?logistics-object=${encodeURIComponent(object)}`)
    ).json()) as Json;
    expect(requests['api:hasTotalItems']).to.equal(0);
    // What this server reads beyond API 2.3 passes: several Delegates (2.0–2.2 clients), permissions by bare name.
    const listed = delegationBody({
      permissions: ['GET_LOGISTICS_OBJECT'],
      for: [partner('airline'), partner('handler')],
      objects: [object],
    });
    expect(
      (
        await postDelegation(server, 'holder', {
          ...listed,
          'api:hasPermission': ['GET_LOGISTICS_OBJECT', { '@id': 'api:POST_LOGISTICS_EVENT' }],
        })
      ).status,
    ).to.equal(201);
    const unknown = await postDelegation(server, 'holder', { ...listed, 'api:hasPermission': 'READ_EVERYTHING' });
    expect(details((await unknown.json()) as Json).map((d) => d.message)).to.deep.equal([
      'api:hasPermission must be one of api:GET_LOGISTICS_EVENT, api:GET_LOGISTICS_OBJECT, api:PATCH_LOGISTICS_OBJECT, api:POST_LOGISTICS_EVENT, got "READ_EVERYTHING"',
    ]);
  });
});

describe('Data-model validation: once per document written, on exactly what is committed, before the commit', () => {
  let server: TestServer;
  /** Validations and commits in the order they happen. */
  let steps: ({ validated: readonly Quad[] } | { committed: WriteTransaction })[] = [];
  const validate = Object.getOwnPropertyDescriptor(ShapeValidator.prototype, 'validate')!;
  before(async () => {
    server = await startTestServer({ decisionPolicy: 'manual' });
    ShapeValidator.prototype.validate = function (this: ShapeValidator, triples: readonly Quad[]) {
      steps.push({ validated: triples });
      return (validate.value as ShapeValidator['validate']).call(this, triples);
    };
    const store = server.running.store;
    const commit = store.commit.bind(store);
    store.commit = (tx) => {
      steps.push({ committed: tx });
      return commit(tx);
    };
  });
  after(async () => {
    Object.defineProperty(ShapeValidator.prototype, 'validate', validate);
    await server.close();
  });
  beforeEach(() => (steps = []));

  /** The validated triple arrays in order, and the one transaction committed after them. */
  const observed = () => {
    const validated = steps.flatMap((s) => ('validated' in s ? [s.validated] : []));
    const commits = steps.flatMap((s) => ('committed' in s ? [s.committed] : []));
    expect(commits, 'one commit').to.have.length(1);
    expect('committed' in steps[steps.length - 1], 'the commit comes after every validation').to.equal(true);
    return { validated, tx: commits[0] };
  };
  const keys = (triples: readonly Quad[]) =>
    triples.map((t) => `${t.subject.value} ${t.predicate.value} ${t.object.value}`).sort();

  it('POST /logistics-objects: each object created is validated once, and its validated triples are its revision graph', async () => {
    const res = await postJsonLd(server, '/logistics-objects', {
      '@context': { cargo: CARGO },
      '@type': 'cargo:Shipment',
      'cargo:goodsDescription': 'Shipment',
      'cargo:pieces': { '@type': 'cargo:Piece', 'cargo:goodsDescription': 'Piece' },
    });
    expect(res.status).to.equal(201);
    const { validated, tx } = observed();
    expect(validated).to.have.length(2);
    expect(tx.revisions.map((w) => w.triples)).to.have.members(validated);
  });

  it('PATCH: the Change document once when received; the resulting revision once when decided, and that revision is what is committed', async () => {
    const object = await createObject(server);
    steps = [];
    const request = await submit(
      server,
      object,
      change(object, 1, [add(object, 'goodsDescription', str('Magazines'))]),
      'other',
    );
    const received = observed();
    expect(received.validated).to.have.length(1);
    expect(received.validated[0].some((t) => t.object.value === api.Change)).to.equal(true);
    expect(received.tx.revisions).to.deep.equal([]);

    steps = [];
    expect((await server.request(`${request}?status=REQUEST_ACCEPTED`, { method: 'PATCH' })).status).to.equal(204);
    const decided = observed();
    expect(decided.validated).to.have.length(1);
    expect(decided.tx.revisions.map((w) => w.triples)).to.deep.equal(decided.validated);
  });

  it('PATCH: a resulting revision that breaks a shape is validated once and only the REQUEST_FAILED status is committed', async () => {
    const object = await createObject(server);
    const request = await submit(
      server,
      object,
      change(object, 1, [del(object, 'coload', bool(false)), add(object, 'coload', str('no'))]),
      'other',
    );
    steps = [];
    expect((await server.request(`${request}?status=REQUEST_ACCEPTED`, { method: 'PATCH' })).status).to.equal(422);
    const { validated, tx } = observed();
    expect(validated).to.have.length(1);
    expect(tx.revisions).to.deep.equal([]);
    expect(tx.events.map((e) => e.kind)).to.deep.equal(['action-request-decided']);
    expect(await statusOf(server, request)).to.equal('REQUEST_FAILED');
  });

  it('POST /access-delegations: the AccessDelegation once when received, and not again when accepted', async () => {
    const object = await createObject(server);
    steps = [];
    const res = await postDelegation(
      server,
      'holder',
      delegationBody({ permissions: ['GET_LOGISTICS_OBJECT'], for: partner('airline'), objects: [object] }),
    );
    expect(res.status).to.equal(201);
    const received = observed();
    expect(received.validated).to.have.length(1);
    expect(received.validated[0].some((t) => t.object.value === api.AccessDelegation)).to.equal(true);
    steps = [];
    expect(
      (await server.request(`${res.headers.get('location')}?status=REQUEST_ACCEPTED`, { method: 'PATCH' })).status,
    ).to.equal(204);
    expect(observed().validated).to.deep.equal([]);
  });

  it('Logistics Events: each event validated once, and its validated triples are its graph; bulk events in one commit', async () => {
    const object = await createObject(server);
    steps = [];
    expect((await postEvent(server, object, eventJson())).status).to.equal(201);
    const single = observed();
    expect(single.validated).to.have.length(1);
    const graph = (tx: WriteTransaction, g: string) => tx.insert.filter((q) => q.graph.value === g);
    const [event] = single.tx.events.flatMap((e) => (e.kind === 'event-appended' ? [e.event.iri] : []));
    expect(keys(graph(single.tx, event))).to.deep.equal(keys(single.validated[0]));

    steps = [];
    const bulk = await postJsonLd(server, '/logistics-events', {
      '@context': { cargo: CARGO },
      '@graph': [
        { ...eventJson({ code: 'DEP' }), '@context': undefined, 'cargo:eventFor': { '@id': object } },
        { ...eventJson({ code: 'ARR' }), '@context': undefined, 'cargo:eventFor': { '@id': object } },
      ],
    });
    expect(bulk.status).to.equal(207);
    const many = observed();
    expect(many.validated).to.have.length(2);
    const iris = many.tx.events.flatMap((e) => (e.kind === 'event-appended' ? [e.event.iri] : []));
    expect(iris.map((iri) => keys(graph(many.tx, iri)))).to.have.deep.members(many.validated.map(keys));
  });
});

describe('Data-model validation settings and stored data', () => {
  it('objects stored before validation (or under older shapes) stay readable; a change is validated on the resulting revision only', async () => {
    const first = await startTestServer({ validation: { enabled: false } });
    try {
      const res = await postJsonLd(first, '/logistics-objects', invalidPiece());
      expect(res.status).to.equal(201);
      const object = res.headers.get('location')!;
      await first.stop();
      const port = Number(new URL(first.url).port);
      const second = await startTestServer({ port, baseUrl: first.url }, first.dataDir);
      try {
        expect((await second.request(object)).status).to.equal(200);
        // Still invalid after this change (two descriptions remain): refused, nothing changes.
        const stillInvalid = await submit(
          second,
          object,
          change(object, 1, [add(object, 'coload', { datatype: `${XSD}boolean`, value: 'true' })]),
        );
        expect(await statusOf(second, stillInvalid)).to.equal('REQUEST_FAILED');
        // This change repairs both problems: accepted.
        const weight = ((await readJson(second, object))['cargo:grossWeight'] as Json)['@id'] as string;
        const repair = await submit(
          second,
          object,
          change(object, 1, [
            del(object, 'goodsDescription', str('Magazines')),
            del(weight, 'numericalValue', str('abc')),
            add(weight, 'numericalValue', { datatype: `${XSD}double`, value: '20' }),
          ]),
        );
        expect(await statusOf(second, repair)).to.equal('REQUEST_ACCEPTED');
      } finally {
        await second.close();
      }
    } finally {
      await rm(first.dataDir, { recursive: true, force: true });
    }
  });

  it('validation.strict refuses properties unknown to the ontologies; the default accepts them', async () => {
    const body = { ...piece(), 'https://example.com/vocab#colour': 'red' };
    const open = await startTestServer();
    const strict = await startTestServer({ validation: { strict: true } });
    try {
      expect((await postJsonLd(open, '/logistics-objects', body)).status).to.equal(201);
      const res = await postJsonLd(strict, '/logistics-objects', body);
      expect(res.status).to.equal(400);
      expect(details((await res.json()) as Json).map((d) => d.message)).to.deep.equal([
        '<https://example.com/vocab#colour> is not a property of the ONE Record ontologies (strict mode)',
      ]);
    } finally {
      await open.close();
      await strict.close();
    }
  });
});

describe('GET /shapes', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  it('serves the shapes the server checks as Turtle to authenticated callers (partners too)', async () => {
    const res = await server.request('/shapes', { agent: 'other', headers: { Accept: 'text/turtle' } });
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^text\/turtle/);
    const text = await res.text();
    expect(text).to.equal(readFileSync(SHAPES_FILE, 'utf8'));
    expect(new Parser().parse(text).length).to.be.greaterThan(1000);
  });

  it('401 without a token; 406 when Turtle is not acceptable', async () => {
    expect((await server.request('/shapes', { agent: 'none' })).status).to.equal(401);
    expect((await server.request('/shapes', { headers: { Accept: 'application/ld+json' } })).status).to.equal(406);
  });
});
