import { expect } from 'chai';
import { ERROR_TITLES } from '../../src/errors.js';

export interface ApiErrorBody {
  '@type': string;
  'api:hasTitle': string;
  details: { code: string; message: string }[];
}

/**
 * Asserts that `res` is an api:Error answer with `status` (title, Content-Type, Content-Language,
 * hasCode) and returns its details; `message` must match one of them when given.
 */
export async function expectApiError(res: Response, status: number, message?: RegExp): Promise<ApiErrorBody> {
  const text = await res.text();
  expect(res.status, text).to.equal(status);
  expect(res.headers.get('content-type')).to.match(/^application\/ld\+json/);
  expect(res.headers.get('content-language')).to.equal('en-US');
  const body = JSON.parse(text) as Record<string, unknown>;
  expect(body['@type']).to.equal('api:Error');
  expect(body['api:hasTitle']).to.equal(ERROR_TITLES[status]);
  const details = ([body['api:hasErrorDetail']].flat() as Record<string, string>[]).map((d) => ({ code: d['api:hasCode'], message: d['api:hasMessage'] }));
  expect(details.length).to.be.greaterThan(0);
  for (const d of details) expect(d.code).to.equal(String(status));
  if (message) expect(details.map((d) => d.message).join('\n')).to.match(message);
  return { '@type': body['@type'] as string, 'api:hasTitle': body['api:hasTitle'] as string, details };
}
