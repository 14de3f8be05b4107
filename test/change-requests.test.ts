import { expect } from 'chai';
import { readExample, rebase, KNOWN_DEFECTS } from './support/examples.js';
import { postJsonLd, startTestServer, type TestServer } from './support/server.js';
import {
  API,
  CARGO,
  XSD,
  add,
  asList,
  bool,
  change,
  cls,
  createObject,
  dbl,
  del,
  errorCodes,
  patch,
  readJson,
  statusOf,
  str,
  submit,
} from './support/changes.js';

type Json = Record<string, unknown>;

/** The object's triples as N-Triples lines, without the revision numbers, sorted. */
async function state(server: TestServer, object: string, query = ''): Promise<string[]> {
  const res = await server.request(`${object}${query}`, { headers: { Accept: 'application/n-triples' } });
  expect(res.status).to.equal(200);
  return (await res.text())
    .split('\n')
    .filter((l) => l && !l.includes(`${API}hasRevision`) && !l.includes(`${API}hasLatestRevision`))
    .sort();
}

async function latestRevision(server: TestServer, object: string): Promise<number> {
  const res = await server.request(object);
  return Number(res.headers.get('latest-revision'));
}

async function requestCount(server: TestServer): Promise<number> {
  const body = await readJson(server, '/action-requests');
  return body['api:hasTotalItems'] as number;
}

function weightOf(object: Json): string {
  return (object['cargo:grossWeight'] as Json)['@id'] as string;
}

describe('PATCH /logistics-objects/{id}: change requests', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  it('creates a ChangeRequest: 201, Location under /action-requests/, Type, requester, times and status', async () => {
    const object = await createObject(server);
    const before = Date.now();
    const res = await patch(server, object, change(object, 1, [add(object, 'remarks', str('Pens'))]), 'other');
    expect(res.status).to.equal(201);
    expect(res.headers.get('type')).to.equal(`${API}ChangeRequest`);
    const location = res.headers.get('location')!;
    expect(location).to.match(new RegExp(`^${server.url.replace(/[.]/g, '\\.')}/action-requests/[0-9a-f-]{36}$`));
    const request = await readJson(server, location, 'other');
    expect(request['@id']).to.equal(location);
    expect(request['@type']).to.equal('api:ChangeRequest');
    expect((request['api:isRequestedBy'] as Json)['@id']).to.equal(
      'https://partner.example.com/logistics-objects/partner-org',
    );
    const requestedAt = Date.parse((request['api:isRequestedAt'] as Json)['@value'] as string);
    expect(requestedAt).to.be.within(before - 1000, Date.now());
    expect((request['api:hasRequestStatus'] as Json)['@id']).to.equal(`${API}REQUEST_PENDING`);
    expect((request['api:hasRequestStatusSince'] as Json)['@value']).to.equal(
      (request['api:isRequestedAt'] as Json)['@value'],
    );
    expect((request['api:hasLogisticsObject'] as Json)['@id']).to.equal(object);
    const stored = request['api:hasChange'] as Json;
    expect(stored['api:hasDescription']).to.equal('test change');
    const operation = stored['api:hasOperation'] as Json;
    expect(operation['api:s']).to.equal(object);
    expect((operation['api:o'] as Json)['api:hasValue']).to.equal('Pens');
  });

  describe('rule 1: only ADD and DELETE; a replace is a DELETE plus an ADD', () => {
    it('replaces a value', async () => {
      const object = await createObject(server);
      const request = await submit(
        server,
        object,
        change(object, 1, [del(object, 'coload', bool(false)), add(object, 'coload', bool(true))]),
      );
      expect(await statusOf(server, request)).to.equal('REQUEST_ACCEPTED');
      const body = await readJson(server, object);
      expect(body['cargo:coload']).to.equal(true);
      expect(body['api:hasRevision']).to.equal(2);
    });

    it('refuses any other operation with 400, storing nothing', async () => {
      const object = await createObject(server);
      const count = await requestCount(server);
      const body = change(object, 1, [add(object, 'remarks', str('x'))]);
      ((body['api:hasOperation'] as Json[])[0]['api:op'] as Json)['@id'] = 'api:REPLACE';
      const res = await patch(server, object, body);
      expect(res.status).to.equal(400);
      expect(((await res.json()) as Json)['@type']).to.equal('api:Error');
      expect(await requestCount(server)).to.equal(count);
    });
  });

  describe('rule 2: DELETEs before ADDs, atomically', () => {
    it('runs every DELETE before any ADD, whatever their order in the Change', async () => {
      const object = await createObject(server);
      // In written order the ADD would meet a value already present and fail.
      const request = await submit(
        server,
        object,
        change(object, 1, [add(object, 'remarks', str('Books')), del(object, 'remarks', str('Books'))]),
      );
      expect(await statusOf(server, request)).to.equal('REQUEST_ACCEPTED');
      expect((await readJson(server, object))['cargo:remarks']).to.equal('Books');
    });

    it('a failing DELETE leaves the object exactly as it was: REQUEST_FAILED with a 422 error', async () => {
      const object = await createObject(server);
      const before = await state(server, object);
      const request = await submit(
        server,
        object,
        change(object, 1, [
          add(object, 'remarks', str('Toys')),
          del(object, 'coload', bool(false)),
          del(object, 'remarks', str('not there')),
        ]),
      );
      const body = await readJson(server, request);
      expect((body['api:hasRequestStatus'] as Json)['@id']).to.equal(`${API}REQUEST_FAILED`);
      expect(errorCodes(body)).to.deep.equal(['422']);
      const error = body['api:hasError'] as Json;
      expect(error['@type']).to.equal('api:Error');
      expect(error['@id']).to.match(new RegExp(`^${request}/errors/[0-9a-f-]{36}$`));
      expect(await state(server, object)).to.deep.equal(before);
      expect(await latestRevision(server, object)).to.equal(1);
    });

    it('adding a value already present fails the whole change the same way', async () => {
      const object = await createObject(server);
      const before = await state(server, object);
      const request = await submit(
        server,
        object,
        change(object, 1, [del(object, 'coload', bool(false)), add(object, 'remarks', str('Books'))]),
      );
      expect(await statusOf(server, request)).to.equal('REQUEST_FAILED');
      expect(await state(server, object)).to.deep.equal(before);
    });
  });

  describe('rule 3: an applied change makes a new revision and enters the audit trail', () => {
    it('increments the revision and keeps the old one readable', async () => {
      const object = await createObject(server);
      const first = await state(server, object);
      const request = await submit(server, object, change(object, 1, [add(object, 'remarks', str('Pens'))]));
      expect(await latestRevision(server, object)).to.equal(2);
      expect(await state(server, object, '?revision=1')).to.deep.equal(first);
      const trail = await readJson(server, `${object}/audit-trail`);
      expect((trail['api:hasActionRequest'] as Json)['@id']).to.equal(request);
    });
  });

  describe('rule 4: hasLogisticsObject must be the addressed object', () => {
    it('400 and no request stored', async () => {
      const object = await createObject(server);
      const other = await createObject(server);
      const count = await requestCount(server);
      const res = await patch(server, object, change(other, 1, [add(other, 'remarks', str('x'))]));
      expect(res.status).to.equal(400);
      expect(await requestCount(server)).to.equal(count);
    });
  });

  describe('rule 5: hasLogisticsEvent cannot be changed', () => {
    for (const property of [`${API}hasLogisticsEvent`, `${CARGO}events`]) {
      it(`400 for an operation on ${property}, no request stored`, async () => {
        const object = await createObject(server);
        const count = await requestCount(server);
        const res = await patch(
          server,
          object,
          change(object, 1, [add(object, property, cls('LogisticsEvent', `${object}/logistics-events/e1`))]),
        );
        expect(res.status).to.equal(400);
        expect(await requestCount(server)).to.equal(count);
      });
    }
  });

  describe('rule 6: PATCH links existing Logistics Objects, never creates them', () => {
    it('links an existing object by its URI', async () => {
      const object = await createObject(server);
      const customs = await createObject(server, {
        '@context': { cargo: CARGO },
        '@type': 'cargo:CustomsInformation',
        'cargo:otherCustomsInformation': 'x',
      });
      const request = await submit(
        server,
        object,
        change(object, 1, [add(object, 'customsInformation', cls('CustomsInformation', customs))]),
      );
      expect(await statusOf(server, request)).to.equal('REQUEST_ACCEPTED');
      expect((await readJson(server, object))['cargo:customsInformation']).to.deep.equal({ '@id': customs });
    });

    it('400 for a blank node typed with a Logistics Object class, a local URI that does not exist, or another object as subject', async () => {
      const object = await createObject(server);
      const other = await createObject(server);
      const count = await requestCount(server);
      const attempts = [
        [
          add(object, 'customsInformation', cls('CustomsInformation', '_:c1')),
          add('_:c1', 'otherCustomsInformation', str('x')),
        ],
        [add(object, 'customsInformation', cls('CustomsInformation', `${object}-missing`))],
        [add(other, 'remarks', str('x'))],
        [add(`${object}-new`, 'remarks', str('x'))],
      ];
      for (const operations of attempts) {
        const res = await patch(server, object, change(object, 1, operations));
        expect(res.status, JSON.stringify(operations)).to.equal(400);
      }
      expect(await requestCount(server)).to.equal(count);
      expect(await latestRevision(server, other)).to.equal(1);
    });
  });

  describe('rule 7: blank nodes with a non-LO class become internal: embedded objects', () => {
    it('creates the embedded object, and a later change addresses it by its id', async () => {
      const object = await createObject(server, {
        '@context': { cargo: CARGO },
        '@type': 'cargo:Piece',
        'cargo:remarks': 'Books',
      });
      await submit(
        server,
        object,
        change(object, 1, [
          add(object, 'grossWeight', cls('Value', '_:w')),
          add('_:w', 'unit', {
            datatype: 'https://onerecord.iata.org/ns/code-lists/MeasurementUnitCode',
            value: 'https://onerecord.iata.org/ns/code-lists/MeasurementUnitCode#KGM',
          }),
          add('_:w', 'numericalValue', dbl('20.0')),
        ]),
      );
      const weight = (await readJson(server, object))['cargo:grossWeight'] as Json;
      expect(weight['@id']).to.match(/^internal:[0-9a-f-]{36}$/);
      expect(weight['@type']).to.equal('cargo:Value');
      expect(weight['cargo:unit']).to.deep.equal({
        '@id': 'https://onerecord.iata.org/ns/code-lists/MeasurementUnitCode#KGM',
      });
      const id = weight['@id'] as string;
      const request = await submit(
        server,
        object,
        change(object, 2, [del(id, 'numericalValue', dbl('20')), add(id, 'numericalValue', dbl('25.0'))]),
      );
      expect(await statusOf(server, request)).to.equal('REQUEST_ACCEPTED');
      expect(((await readJson(server, object))['cargo:grossWeight'] as Json)['cargo:numericalValue']).to.deep.equal({
        '@value': '25',
        '@type': 'xsd:double',
      });
    });

    it('400 for a label used as subject that no ADD introduces', async () => {
      const object = await createObject(server);
      const res = await patch(server, object, change(object, 1, [add('_:nobody', 'unit', str('KGM'))]));
      expect(res.status).to.equal(400);
    });

    it('a subject that is not an embedded object of this object fails the change (422)', async () => {
      const object = await createObject(server);
      const request = await submit(
        server,
        object,
        change(object, 1, [add('internal:no-such-node', 'unit', str('KGM'))]),
      );
      expect(await statusOf(server, request)).to.equal('REQUEST_FAILED');
    });
  });

  describe('rule 8: a Change on an outdated revision is rejected with 409', () => {
    it('REQUEST_REJECTED with a 409 error; the object is unchanged', async () => {
      const object = await createObject(server);
      await submit(server, object, change(object, 1, [add(object, 'remarks', str('Pens'))]));
      const before = await state(server, object);
      const request = await submit(server, object, change(object, 1, [add(object, 'remarks', str('Cups'))]));
      const body = await readJson(server, request);
      expect((body['api:hasRequestStatus'] as Json)['@id']).to.equal(`${API}REQUEST_REJECTED`);
      expect(errorCodes(body)).to.deep.equal(['409']);
      expect(await state(server, object)).to.deep.equal(before);
    });
  });

  describe('rule 9: accepting one change rejects the other pending ones on that revision', () => {
    it('the holder accepts one of two pending requests; the other becomes REQUEST_REJECTED (409)', async () => {
      const object = await createObject(server);
      const first = await submit(server, object, change(object, 1, [add(object, 'remarks', str('A'))]), 'other');
      const second = await submit(server, object, change(object, 1, [add(object, 'remarks', str('B'))]), 'other');
      const res = await server.request(`${first}?status=REQUEST_ACCEPTED`, { method: 'PATCH' });
      expect(res.status).to.equal(204);
      expect(await statusOf(server, first)).to.equal('REQUEST_ACCEPTED');
      const rejected = await readJson(server, second);
      expect((rejected['api:hasRequestStatus'] as Json)['@id']).to.equal(`${API}REQUEST_REJECTED`);
      expect(errorCodes(rejected)).to.deep.equal(['409']);
    });
  });

  describe('rule 10: no revert through PATCH', () => {
    it('a Change built on an earlier revision is rejected; there is no revert operation', async () => {
      const object = await createObject(server);
      await submit(
        server,
        object,
        change(object, 1, [del(object, 'remarks', str('Books')), add(object, 'remarks', str('Pens'))]),
      );
      const revert = await submit(
        server,
        object,
        change(object, 1, [del(object, 'remarks', str('Pens')), add(object, 'remarks', str('Books'))]),
      );
      expect(await statusOf(server, revert)).to.equal('REQUEST_REJECTED');
      const body = change(object, 2, [add(object, 'remarks', str('x'))]);
      ((body['api:hasOperation'] as Json[])[0]['api:op'] as Json)['@id'] = 'api:REVERT';
      expect((await patch(server, object, body)).status).to.equal(400);
      expect((await readJson(server, object))['cargo:remarks']).to.equal('Pens');
    });
  });

  describe('rule 11: removing an embedded object', () => {
    it("removing the link removes the embedded object's own triples", async () => {
      const object = await createObject(server);
      const weight = weightOf(await readJson(server, object));
      await submit(server, object, change(object, 1, [del(object, 'grossWeight', cls('Value', weight))]));
      const lines = await state(server, object);
      expect(lines.some((l) => l.includes(weight))).to.equal(false);
      expect(lines.some((l) => l.includes(`${CARGO}remarks`))).to.equal(true);
    });
  });

  describe('values are compared as RDF values, as the store keeps them', () => {
    for (const [written, datatype] of [
      ['20.0', 'double'],
      ['2.0E1', 'double'],
      ['20', 'double'],
      ['+20.000', 'double'],
    ] as const) {
      it(`"${written}"^^xsd:${datatype} deletes a stored 20.0`, async () => {
        const object = await createObject(server);
        const weight = weightOf(await readJson(server, object));
        const request = await submit(
          server,
          object,
          change(object, 1, [del(weight, 'numericalValue', { datatype: `${XSD}${datatype}`, value: written })]),
        );
        expect(await statusOf(server, request)).to.equal('REQUEST_ACCEPTED');
      });
    }

    it('a decimal 12.50 and 12.5 are the same value; a double 20.0 is not a decimal 20', async () => {
      const object = await createObject(server);
      const weight = weightOf(await readJson(server, object));
      await submit(
        server,
        object,
        change(object, 1, [
          add(object, 'https://example.org/ns#amount', { datatype: `${XSD}decimal`, value: '12.50' }),
        ]),
      );
      const same = await submit(
        server,
        object,
        change(object, 2, [del(object, 'https://example.org/ns#amount', { datatype: `${XSD}decimal`, value: '12.5' })]),
      );
      expect(await statusOf(server, same)).to.equal('REQUEST_ACCEPTED');
      const other = await submit(
        server,
        object,
        change(object, 3, [del(weight, 'numericalValue', { datatype: `${XSD}decimal`, value: '20' })]),
      );
      expect(await statusOf(server, other)).to.equal('REQUEST_FAILED');
    });

    it('400 for a value that is not of its datatype', async () => {
      const object = await createObject(server);
      expect(
        (
          await patch(
            server,
            object,
            change(object, 1, [add(object, 'coload', { datatype: `${XSD}boolean`, value: 'yes' })]),
          )
        ).status,
      ).to.equal(400);
    });
  });

  describe('malformed Changes: 400, nothing stored', () => {
    const cases: [string, (object: string) => unknown][] = [
      ['no operation', (o) => ({ ...change(o, 1, []), 'api:hasOperation': undefined })],
      ['no hasRevision', (o) => ({ ...change(o, 1, [add(o, 'remarks', str('x'))]), 'api:hasRevision': undefined })],
      ['revision 0', (o) => change(o, 0, [add(o, 'remarks', str('x'))])],
      [
        'an operation without s',
        (o) => change(o, 1, [{ op: 'ADD', s: undefined as unknown as string, p: `${CARGO}remarks`, o: [str('x')] }]),
      ],
      ['an operation without o', (o) => change(o, 1, [{ op: 'ADD', s: o, p: `${CARGO}remarks`, o: [] }])],
      ['p that is not an IRI', (o) => change(o, 1, [{ op: 'ADD', s: o, p: 'goods description', o: [str('x')] }])],
      ['not JSON', () => '{"@type": '],
    ];
    for (const [name, body] of cases) {
      it(name, async () => {
        const object = await createObject(server);
        const count = await requestCount(server);
        const res = await patch(server, object, body(object));
        expect(res.status).to.equal(400);
        expect(await requestCount(server)).to.equal(count);
      });
    }

    it('415 for a Change in Turtle, 404 for an unknown object, 401 without a token', async () => {
      const object = await createObject(server);
      const turtle = await server.request(object, {
        method: 'PATCH',
        headers: { 'Content-Type': 'text/turtle' },
        body: '<a:b> <c:d> "e" .',
      });
      expect(turtle.status).to.equal(415);
      const missing = `${server.url}/logistics-objects/no-such-object`;
      expect((await patch(server, missing, change(missing, 1, [add(missing, 'remarks', str('x'))]))).status).to.equal(
        404,
      );
      const anonymous = await server.request(object, {
        method: 'PATCH',
        agent: 'none',
        headers: { 'Content-Type': 'application/ld+json' },
        body: '{}',
      });
      expect(anonymous.status).to.equal(401);
    });
  });

  it('takes api:p and api:hasDatatype as links ({"@id"}) as well as xsd:anyURI literals, and stores the literals', async () => {
    const object = await createObject(server);
    const body = change(object, 1, [add(object, 'remarks', str('Linked'))]);
    const links = {
      ...body,
      '@context': { ...(body['@context'] as Json), 'api:hasDatatype': { '@type': '@id' }, 'api:p': { '@type': '@id' } },
    };
    const location = await submit(server, object, links, 'other');
    const operation = ((await readJson(server, location, 'other'))['api:hasChange'] as Json)[
      'api:hasOperation'
    ] as Json;
    expect(operation['api:p']).to.deep.equal({ '@type': 'xsd:anyURI', '@value': `${CARGO}remarks` });
    expect((operation['api:o'] as Json)['api:hasDatatype']).to.deep.equal({
      '@type': 'xsd:anyURI',
      '@value': `${XSD}string`,
    });
  });

  it('405 with api:Error for methods a Logistics Object does not support', async () => {
    const object = await createObject(server);
    const res = await server.request(object, {
      method: 'PUT',
      headers: { 'Content-Type': 'application/ld+json' },
      body: '{}',
    });
    expect(res.status).to.equal(405);
    expect(res.headers.get('allow')).to.equal('GET, HEAD, PATCH');
    expect(((await res.json()) as Json)['@type']).to.equal('api:Error');
  });

  it('replays the official Change examples on the official Piece', async () => {
    const prefix = `${server.url}/logistics-objects/`;
    const example = (name: string, replace: [string | RegExp, string][] = []) => {
      let text = rebase(readExample(name), prefix);
      for (const [from, to] of replace) text = text.replace(from, to);
      return text;
    };
    const pieceText = KNOWN_DEFECTS['Piece_with_id.json'].correct(example('Piece_with_id.json'));
    const object = (JSON.parse(pieceText) as Json)['@id'] as string;
    expect((await postJsonLd(server, '/logistics-objects', pieceText)).status).to.equal(201);
    for (const name of ['CustomsInformation.json', 'CustomsInformation_2.json']) {
      const id =
        name === 'CustomsInformation.json'
          ? '4d73acf0-3073-4ec9-8aee-b82d64ba3805'
          : 'ba1c2194-2442-400b-b26b-466a01dda8b5';
      const body = { ...(JSON.parse(example(name)) as Json), '@id': `${prefix}${id}` };
      expect((await postJsonLd(server, '/logistics-objects', body)).status).to.equal(201);
    }

    expect(await statusOf(server, await submit(server, object, example('Change_example1.json')))).to.equal(
      'REQUEST_ACCEPTED',
    );
    expect(await statusOf(server, await submit(server, object, example('Change_example2.json')))).to.equal(
      'REQUEST_ACCEPTED',
    );
    const weight = weightOf(await readJson(server, object));
    const sample = 'internal:7fc81d1d-6c75-568b-9e47-48c947ed2a07';
    // Example 3 is built on revision 2, which example 2 has just replaced.
    expect(
      await statusOf(
        server,
        await submit(server, object, example('Change_example3.json', [[new RegExp(sample, 'g'), weight]])),
      ),
    ).to.equal('REQUEST_REJECTED');
    expect(
      await statusOf(
        server,
        await submit(server, object, example('Change_example4.json', [[new RegExp(sample, 'g'), weight]])),
      ),
    ).to.equal('REQUEST_ACCEPTED');
    expect(await statusOf(server, await submit(server, object, example('Change_example5.json')))).to.equal(
      'REQUEST_ACCEPTED',
    );
    expect((await patch(server, object, example('Change_example6.json'))).status).to.equal(400);
    expect((await patch(server, object, example('Change_example7.json'))).status).to.equal(400);

    const final = await readJson(server, object);
    expect(final['api:hasRevision']).to.equal(5);
    expect(final['cargo:goodsDescription']).to.equal('ONE Record Advertisement Materials');
    expect(final['cargo:coload']).to.equal(true);
    expect(final['cargo:grossWeight']).to.equal(undefined);
    expect(
      asList(final['cargo:customsInformation'] as Json[])
        .map((c) => c['@id'])
        .sort(),
    ).to.deep.equal(
      [`${prefix}4d73acf0-3073-4ec9-8aee-b82d64ba3805`, `${prefix}ba1c2194-2442-400b-b26b-466a01dda8b5`].sort(),
    );
  });
});
