import { expect } from 'chai';
import jsonld from 'jsonld';
import { ERROR_TITLES, INVALID_QUERY_TITLE } from '../../src/errors.js';
import { refuseRemote } from './rdf-compare.js';

export interface ApiErrorBody {
  '@type': string;
  'api:hasTitle': string;
  details: { code: string; message: string }[];
}

const API = 'https://onerecord.iata.org/ns/api#';
type Json = Record<string, unknown>;
const INTERNAL_ID = /^internal:[0-9a-f-]{36}$/;

/**
 * What a strict client sees: `jsonld.frame(body, {})` (jsonld.js, expanded IRIs) must give one
 * api:Error node with an `internal:` @id, hasTitle, and details that are api:ErrorDetail nodes with
 * their own @id, hasCode = `status` and hasMessage. Returns the framed error node.
 */
export async function expectFramedApiError(
  body: unknown,
  status: number,
  expected: { title?: string; id?: RegExp } = {},
): Promise<Json> {
  const framed = (await jsonld.frame(body as jsonld.JsonLdDocument, {}, {
    documentLoader: refuseRemote,
  } as jsonld.Options.Frame)) as Json;
  const nodes = (framed['@graph'] as Json[] | undefined) ?? [framed];
  const errors = nodes.filter((n) => [n['@type']].flat().includes(`${API}Error`));
  expect(errors, JSON.stringify(framed)).to.have.length(1);
  const error = errors[0];
  expect(error['@id']).to.match(expected.id ?? INTERNAL_ID);
  expect(error[`${API}hasTitle`]).to.equal(expected.title ?? ERROR_TITLES[status]);
  const details = [error[`${API}hasErrorDetail`]].flat() as Json[];
  expect(details.length, JSON.stringify(error)).to.be.greaterThan(0);
  for (const d of details) {
    expect(d['@id']).to.match(INTERNAL_ID);
    expect(d['@type']).to.equal(`${API}ErrorDetail`);
    expect(d[`${API}hasCode`]).to.equal(String(status));
    expect(d[`${API}hasMessage`]).to.be.a('string');
  }
  return error;
}

/**
 * Asserts that `res` is an api:Error answer with `status` (title, Content-Type, Content-Language,
 * hasCode, ids a client can frame) and returns its details; `message` must match one of them when given.
 * A 400 about a query parameter has its own title.
 */
export async function expectApiError(res: Response, status: number, message?: RegExp): Promise<ApiErrorBody> {
  const text = await res.text();
  expect(res.status, text).to.equal(status);
  expect(res.headers.get('content-type')).to.match(/^application\/ld\+json/);
  expect(res.headers.get('content-language')).to.equal('en-US');
  const body = JSON.parse(text) as Json;
  expect(body['@type']).to.equal('api:Error');
  const title = body['api:hasTitle'] as string;
  expect(status === 400 ? [ERROR_TITLES[400], INVALID_QUERY_TITLE] : [ERROR_TITLES[status]]).to.include(title);
  await expectFramedApiError(body, status, { title });
  const details = ([body['api:hasErrorDetail']].flat() as Record<string, string>[]).map((d) => ({
    code: d['api:hasCode'],
    message: d['api:hasMessage'],
  }));
  if (message) expect(details.map((d) => d.message).join('\n')).to.match(message);
  return { '@type': body['@type'] as string, 'api:hasTitle': body['api:hasTitle'] as string, details };
}
