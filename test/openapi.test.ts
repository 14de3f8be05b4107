import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { expect } from 'chai';
import { parse } from 'yaml';
import { add, change, piece, str } from './support/changes.js';
import { eventJson } from './support/events.js';
import { OTHER_AGENT, startTestServer, type TestServer } from './support/server.js';
import { API } from './support/access.js';

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => void;
const METRICS_TOKEN = 'metrics-token-for-openapi-test-42';

type Json = Record<string, unknown>;
interface Operation {
  parameters?: Json[];
  responses: Record<
    string,
    { headers?: Record<string, { required?: boolean }>; content?: Record<string, { schema?: unknown }> }
  >;
}
interface Document {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
}

const mediaType = (contentType: string | null) => (contentType ?? '').split(';')[0].trim().toLowerCase();

describe('OpenAPI: the served description matches every route and answer', function () {
  this.timeout(60_000);
  let server: TestServer;
  let doc: Document;
  let ajv: Ajv2020;
  const validators = new Map<unknown, ValidateFunction>();
  /** `METHOD template` of each operation a request went through. */
  const exercised = new Set<string>();

  before(async () => {
    // Outbound calls to loopback: the server subscribes at itself (remote subscriptions) and notifies itself.
    server = await startTestServer({ metrics: { token: METRICS_TOKEN }, outbound: { allowPrivateAddresses: true } });
    const res = await fetch(`${server.url}/openapi.json`);
    expect(res.status).to.equal(200);
    doc = (await res.json()) as Document;
    ajv = new Ajv2020({ strict: false, allErrors: true, logger: false });
    addFormats(ajv);
    ajv.addFormat('HTTP-date', true);
    ajv.addSchema(doc as unknown as Json, 'openapi.json');
  });
  after(() => server.close());

  /** Which path template of the description an URL path is. */
  const templateOf = (path: string): string => {
    const found = Object.keys(doc.paths).find((template) =>
      new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`).test(path),
    );
    if (!found) throw new Error(`no path of the description matches ${path}`);
    return found;
  };

  const validatorFor = (schema: unknown): ValidateFunction => {
    let validate = validators.get(schema);
    if (!validate) {
      const text = JSON.stringify(schema).replace(/"#\/components\//g, '"openapi.json#/components/');
      validate = ajv.compile(JSON.parse(text) as Json);
      validators.set(schema, validate);
    }
    return validate;
  };

  /** Sends a request and checks its answer against the description: status, required headers, media type, body. */
  const call = async (
    method: string,
    path: string,
    init: RequestInit & { agent?: 'holder' | 'other' | 'none' } = {},
  ): Promise<Response> => {
    const url = new URL(path, server.url);
    const res = await server.request(url.toString(), { ...init, method });
    const template = templateOf(url.pathname);
    const operation = doc.paths[template]?.[method.toLowerCase()];
    expect(operation, `${method} ${template} is not described`).to.not.equal(undefined);
    exercised.add(`${method} ${template}`);
    const response = operation!.responses[String(res.status)];
    expect(
      response,
      `${method} ${path}: status ${res.status} is not described (${Object.keys(operation!.responses).join(', ')})`,
    ).to.not.equal(undefined);
    for (const [name, header] of Object.entries(response.headers ?? {})) {
      if (header.required)
        expect(res.headers.has(name), `${method} ${path} ${res.status}: header ${name} is required`).to.equal(true);
    }
    if (res.status === 204 || method === 'HEAD') return res;
    const text = await res.clone().text();
    if (!response.content) {
      expect(text, `${method} ${path} ${res.status}: a body that is not described`).to.equal('');
      return res;
    }
    const type = mediaType(res.headers.get('content-type'));
    const described = Object.entries(response.content).find(([key]) => mediaType(key) === type);
    expect(
      described,
      `${method} ${path} ${res.status}: ${type} is not described (${Object.keys(response.content).join(', ')})`,
    ).to.not.equal(undefined);
    const schema = described![1].schema;
    if (schema && /json/.test(type)) {
      const validate = validatorFor(schema);
      const valid = validate(JSON.parse(text));
      expect(
        valid,
        `${method} ${path} ${res.status}: body does not match: ${ajv.errorsText(validate.errors)}\n${text.slice(0, 500)}`,
      ).to.equal(true);
    }
    return res;
  };
  const jsonLd = (body: unknown, agent: 'holder' | 'other' = 'holder') => ({
    headers: { 'Content-Type': 'application/ld+json' },
    body: JSON.stringify(body),
    agent,
  });

  it('is OpenAPI 3.1 whose every $ref resolves, also served as YAML and as a page', async () => {
    expect(doc.openapi).to.equal('3.1.0');
    const refs = [...JSON.stringify(doc).matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)].map((m) => m[1]);
    const schemas = (doc as unknown as { components: { schemas: Json } }).components.schemas;
    expect(refs.length).to.be.greaterThan(50);
    expect([...new Set(refs)].filter((name) => !(name in schemas))).to.deep.equal([]);
    for (const operations of Object.values(doc.paths))
      for (const op of Object.values(operations)) expect(Object.keys(op.responses).length).to.be.greaterThan(0);
    const yaml = await call('GET', '/openapi.yaml', { agent: 'none' });
    expect(parse(await yaml.text())).to.deep.equal(doc);
    const page = await call('GET', '/openapi', { agent: 'none' });
    const html = await page.text();
    for (const template of Object.keys(doc.paths)) expect(html, template).to.include(`<code>${template}</code>`);
    await call('GET', '/openapi.json', { agent: 'none' });
  });

  it("is valid against OpenAPI 3.1's own schema, and every Schema Object against JSON Schema 2020-12", async () => {
    const verdict = await new Validator().validate(structuredClone(doc) as unknown as Json);
    expect(verdict.errors, JSON.stringify(verdict.errors, null, 1)).to.equal(undefined);
    expect(verdict.valid).to.equal(true);
    // The official schema leaves Schema Objects to the JSON Schema dialect: each one is checked against it.
    const schemas = Object.entries(
      (doc as unknown as { components: { schemas: Record<string, Json> } }).components.schemas,
    );
    expect(schemas.length).to.be.greaterThan(20);
    for (const [name, schema] of schemas)
      expect(ajv.validateSchema(schema), `${name}: ${ajv.errorsText(ajv.errors)}`).to.equal(true);
    // The check is live: the same document with a response missing its (required) description is refused.
    const broken = structuredClone(doc);
    delete (broken.paths['/logistics-objects/{logisticsObjectId}'].get.responses['200'] as { description?: string })
      .description;
    expect((await new Validator().validate(broken as unknown as Json)).valid).to.equal(false);
  });

  it('server information, Logistics Objects (every format, revision, errors), change requests, audit trail', async () => {
    await call('GET', '/');
    await call('GET', '/', { agent: 'none' });
    const created = await call('POST', '/logistics-objects', jsonLd(piece()));
    expect(created.status).to.equal(201);
    const object = new URL(created.headers.get('location')!).pathname;
    await call('POST', '/logistics-objects', { headers: { 'Content-Type': 'text/csv' }, body: 'a,b' });
    await call('POST', '/logistics-objects', jsonLd({ '@type': 'cargo:Nothing' }));
    for (const accept of ['application/ld+json', 'text/turtle', 'application/n-triples'])
      expect((await call('GET', object, { headers: { Accept: accept } })).status).to.equal(200);
    await call('GET', object, { headers: { Accept: 'image/png' } });
    await call('GET', `${object}?revision=1`);
    await call('GET', '/logistics-objects/no-such-object');
    await call('GET', object, { agent: 'other' });
    const patched = await call(
      'PATCH',
      object,
      jsonLd(
        change(`${server.url}${object}`, 1, [add(`${server.url}${object}`, 'goodsDescription', str('More books'))]),
      ),
    );
    expect(patched.status, await patched.clone().text()).to.equal(201);
    await call('PATCH', object, jsonLd({ '@type': 'api:Change' }));
    await call('GET', `${object}/audit-trail`);
    await call('GET', `${object}/audit-trail`, { headers: { Accept: 'text/turtle' } });
    const request = new URL(patched.headers.get('location')!).pathname;
    await call('GET', request);
    await call('GET', '/action-requests?status=REQUEST_ACCEPTED');
    await call('PATCH', `${request}?status=REQUEST_ACCEPTED`);
    await call('DELETE', request);
    await call('GET', '/action-requests/no-such-request');
  });

  it('Logistics Events: post, list, read, bulk', async () => {
    const created = await call('POST', '/logistics-objects', jsonLd(piece()));
    const object = new URL(created.headers.get('location')!).pathname;
    const posted = await call('POST', `${object}/logistics-events`, jsonLd(eventJson()));
    expect(posted.status).to.equal(201);
    await call('POST', `${object}/logistics-events`, jsonLd({ '@type': 'cargo:LogisticsEvent' }));
    await call('GET', `${object}/logistics-events`);
    await call('GET', new URL(posted.headers.get('location')!).pathname);
    const bulk = await call(
      'POST',
      '/logistics-events',
      jsonLd({ ...eventJson(), 'cargo:eventFor': { '@id': `${server.url}${object}` } }),
    );
    expect(bulk.status).to.equal(207);
  });

  it('moved objects (/internal/moves): move, read, redirect, list, undo', async () => {
    const created = await call('POST', '/logistics-objects', jsonLd(piece()));
    const object = new URL(created.headers.get('location')!).pathname;
    const id = object.split('/').pop()!;
    const move = {
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ location: 'https://elsewhere.example.com/logistics-objects/x', permanent: false }),
    };
    expect((await call('PUT', `/internal/moves/${id}`, move)).status).to.equal(200);
    await call('PUT', `/internal/moves/${id}`, { ...move, agent: 'other' });
    expect((await call('GET', object, { redirect: 'manual' })).status).to.equal(302);
    await call('GET', `/internal/moves/${id}`);
    await call('GET', '/internal/moves');
    expect((await call('DELETE', `/internal/moves/${id}`)).status).to.equal(204);
    await call('GET', `/internal/moves/${id}`);
  });

  it('access control: delegation, grants (grant, list, read, withdraw), explain', async () => {
    const created = await call('POST', '/logistics-objects', jsonLd(piece()));
    const object = created.headers.get('location')!;
    const delegation = {
      '@context': { api: API },
      '@type': 'api:AccessDelegation',
      'api:hasPermission': { '@id': 'api:GET_LOGISTICS_OBJECT' },
      'api:isRequestedFor': { '@id': OTHER_AGENT },
      'api:hasLogisticsObject': { '@id': object },
    };
    const requested = await call('POST', '/access-delegations', jsonLd(delegation));
    expect(requested.status).to.equal(201);
    await call('GET', new URL(requested.headers.get('location')!).pathname);
    await call('POST', '/access-delegations', jsonLd({ ...delegation, 'api:hasPermission': [] }));
    const acl = 'http://www.w3.org/ns/auth/acl#';
    const granted = await call(
      'POST',
      '/internal/acl',
      jsonLd({
        '@type': `${acl}Authorization`,
        [`${acl}agent`]: { '@id': OTHER_AGENT },
        [`${acl}accessTo`]: { '@id': object },
        [`${acl}mode`]: { '@id': `${acl}Read` },
      }),
    );
    expect(granted.status).to.equal(201);
    const grant = new URL(granted.headers.get('location')!).pathname;
    await call('GET', grant);
    await call('GET', `/internal/acl?object=${encodeURIComponent(object)}`);
    await call('GET', `/internal/access?object=${encodeURIComponent(object)}&agent=${encodeURIComponent(OTHER_AGENT)}`);
    await call('GET', '/internal/acl', { agent: 'other' });
    expect((await call('DELETE', grant)).status).to.equal(204);
    expect(
      (
        await call(
          'DELETE',
          `/internal/acl?object=${encodeURIComponent(object)}&agent=${encodeURIComponent(OTHER_AGENT)}`,
        )
      ).status,
    ).to.equal(204);
  });

  it('SPARQL: query string, form, query body, every result format, the page, errors', async () => {
    const select = encodeURIComponent('SELECT ?s WHERE { ?s ?p ?o } LIMIT 2');
    for (const accept of [
      'application/sparql-results+json',
      'application/sparql-results+xml',
      'text/csv',
      'text/tab-separated-values',
    ]) {
      expect((await call('GET', `/sparql?query=${select}`, { headers: { Accept: accept } })).status).to.equal(200);
    }
    const construct = 'CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o } LIMIT 2';
    for (const accept of ['text/turtle', 'application/n-triples', 'application/ld+json']) {
      expect(
        (
          await call('POST', '/sparql?view=events', {
            headers: { 'Content-Type': 'application/sparql-query', Accept: accept },
            body: construct,
          })
        ).status,
      ).to.equal(200);
    }
    expect(
      (
        await call('POST', '/sparql', {
          headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ query: 'ASK {}' }).toString(),
        })
      ).status,
    ).to.equal(200);
    expect((await call('GET', '/sparql', { agent: 'none', headers: { Accept: 'text/html' } })).status).to.equal(200);
    expect(
      (await call('GET', `/sparql?query=${encodeURIComponent('INSERT DATA { <a:b> <a:c> <a:d> }')}`)).status,
    ).to.equal(400);
    expect((await call('GET', `/sparql?query=${select}`, { agent: 'other' })).status).to.equal(403);
  });

  it('identity provider and operator routes', async () => {
    const idp = server.running.services.identityProvider!;
    const form = (fields: Record<string, string>) => ({
      agent: 'none' as const,
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields).toString(),
    });
    expect(
      (
        await call(
          'POST',
          '/idp/token',
          form({ grant_type: 'client_credentials', client_id: idp.devClient.id, client_secret: idp.devClient.secret }),
        )
      ).status,
    ).to.equal(200);
    await call(
      'POST',
      '/idp/token',
      form({ grant_type: 'client_credentials', client_id: idp.devClient.id, client_secret: 'wrong' }),
    );
    await call('POST', '/idp/token', form({ grant_type: 'password' }));
    await call('GET', '/idp/.well-known/jwks.json', { agent: 'none' });
    await call('GET', '/console', { agent: 'none' });
    expect(
      ((await (await call('GET', '/internal/logistics-objects?type=Organization&limit=5')).json()) as { total: number })
        .total,
    ).to.equal(1);
    await call('GET', '/internal/logistics-objects?limit=5000');
    await call('GET', '/internal/logistics-objects', { agent: 'other' });
    await call('GET', '/health/live', { agent: 'none' });
    await call('GET', '/health/ready', { agent: 'none' });
    expect(
      (await call('GET', '/metrics', { agent: 'none', headers: { Authorization: `Bearer ${METRICS_TOKEN}` } })).status,
    ).to.equal(200);
    await call('GET', '/metrics', { agent: 'none' });
    expect((await call('GET', '/shapes', { headers: { Accept: 'text/turtle' } })).status).to.equal(200);
    await call('GET', '/shapes', { agent: 'none' });
    await call('GET', '/shapes', { headers: { Accept: 'application/ld+json' } });
  });

  it('publish and subscribe: subscriptions both ways, notifications received, the outbox', async () => {
    const API = 'https://onerecord.iata.org/ns/api#';
    const created = await call('POST', '/logistics-objects', jsonLd(piece()));
    const object = created.headers.get('location')!;
    const topic = new URLSearchParams({ topicType: `${API}LOGISTICS_OBJECT_IDENTIFIER`, topic: object });
    expect((await call('GET', `/subscriptions?${topic}`)).status).to.equal(200);
    await call('GET', '/subscriptions?topicType=LOGISTICS_OBJECT_IDENTIFIER');
    const subscription = {
      '@context': { api: API },
      '@type': 'api:Subscription',
      'api:hasSubscriber': { '@id': server.running.services.holder },
      'api:hasTopicType': { '@id': 'api:LOGISTICS_OBJECT_IDENTIFIER' },
      'api:hasTopic': { '@type': 'http://www.w3.org/2001/XMLSchema#anyURI', '@value': object },
      'api:includeSubscriptionEventType': { '@id': 'api:LOGISTICS_OBJECT_UPDATED' },
    };
    expect((await call('POST', '/subscriptions', jsonLd(subscription))).status).to.equal(201);
    await call(
      'POST',
      '/subscriptions',
      jsonLd({ ...subscription, 'api:hasTopicType': { '@id': 'api:NO_SUCH_TYPE' } }),
    );
    await call('POST', '/subscriptions', { headers: { 'Content-Type': 'text/csv' }, body: 'a,b' });
    const notification = {
      '@context': { api: API },
      '@id': `${server.url}/notifications/openapi-1`,
      '@type': 'api:Notification',
      'api:hasEventType': { '@id': 'api:LOGISTICS_OBJECT_UPDATED' },
      'api:hasLogisticsObject': { '@id': object },
    };
    expect((await call('POST', '/notifications', jsonLd(notification))).status).to.equal(204);
    await call('POST', '/notifications', jsonLd({ '@type': 'api:Notification' }));
    await call('GET', '/internal/notifications');
    await call('GET', '/internal/notifications?event-type=LOGISTICS_OBJECT_UPDATED', {
      headers: { Accept: 'text/turtle' },
    });
    await call('GET', '/internal/notifications', { agent: 'other' });
    await call('GET', '/internal/notifications/receipts?event-type=LOGISTICS_OBJECT_UPDATED');
    await call('GET', '/internal/outbox/queues');
    await call('GET', '/internal/outbox/dead-letters');
    expect((await call('POST', '/internal/outbox/dead-letters/replay')).status).to.equal(200);
    await call('GET', '/internal/outbox/queues', { agent: 'other' });
    const remote = { headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ topic: object }) };
    expect((await call('POST', '/internal/remote-subscriptions', remote)).status).to.equal(201);
    await call('POST', '/internal/remote-subscriptions', {
      headers: { 'Content-Type': 'application/json' },
      body: '{"topic": 1}',
    });
    await call('POST', '/internal/remote-subscriptions', {
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ topic: object, publisher: 'http://127.0.0.1:1' }),
    });
    await call('GET', '/internal/remote-subscriptions');
  });

  it('every described operation was exercised above', () => {
    const described = Object.entries(doc.paths).flatMap(([template, operations]) =>
      Object.keys(operations).map((method) => `${method.toUpperCase()} ${template}`),
    );
    expect(described.filter((operation) => !exercised.has(operation))).to.deep.equal([]);
  });
});
