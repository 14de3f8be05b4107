import { expect } from 'chai';
import type { TestServer } from './server.js';

export const API = 'https://onerecord.iata.org/ns/api#';
export const ACL = 'http://www.w3.org/ns/auth/acl#';
export const PERMISSION = [
  'GET_LOGISTICS_OBJECT',
  'PATCH_LOGISTICS_OBJECT',
  'POST_LOGISTICS_EVENT',
  'GET_LOGISTICS_EVENT',
] as const;
export type PermissionName = (typeof PERMISSION)[number];

/** Partner organisations, each a client of the embedded identity provider (pass `PARTNER_CLIENTS` to startTestServer). */
export const partner = (name: string) => `https://${name}.example.com/logistics-objects/${name}`;
export const PARTNER_NAMES = ['airline', 'handler', 'trucker', 'broker', 'stranger'] as const;
export type PartnerName = (typeof PARTNER_NAMES)[number];
export const PARTNER_CLIENTS = PARTNER_NAMES.map((name) => ({
  id: name,
  secret: `${name}-secret`,
  agent: partner(name),
}));

const tokens = new WeakMap<Pick<TestServer, 'url'>, Map<string, string>>();

/** A real token of the embedded provider for a partner client. */
export async function partnerToken(server: Pick<TestServer, 'url'>, name: PartnerName): Promise<string> {
  const cache = tokens.get(server) ?? new Map<string, string>();
  tokens.set(server, cache);
  const cached = cache.get(name);
  if (cached) return cached;
  const res = await fetch(`${server.url}/idp/token`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: name, client_secret: `${name}-secret` }),
  });
  expect(res.status).to.equal(200);
  const token = ((await res.json()) as { access_token: string }).access_token;
  cache.set(name, token);
  return token;
}

/** fetch as a partner (or the holder). */
export async function as(
  server: TestServer,
  who: PartnerName | 'holder',
  path: string,
  init: RequestInit = {},
): Promise<Response> {
  if (who === 'holder') return server.request(path, init);
  const headers = new Headers(init.headers);
  headers.set('Authorization', `Bearer ${await partnerToken(server, who)}`);
  return server.request(path, { ...init, headers, agent: 'none' });
}

export interface DelegationFields {
  permissions: readonly string[];
  /** Delegates: one IRI is sent as API 2.3 does, an array as 2.0–2.2 clients do. */
  for: string | string[];
  objects: string[];
  expiresAt?: string;
}

export function delegationBody(d: DelegationFields): Record<string, unknown> {
  return {
    '@context': { api: API },
    '@type': 'api:AccessDelegation',
    'api:hasDescription': 'test delegation',
    'api:hasPermission': d.permissions.map((p) => ({ '@id': `api:${p}` })),
    'api:isRequestedFor': Array.isArray(d.for) ? d.for.map((o) => ({ '@id': o })) : { '@id': d.for },
    'api:hasLogisticsObject': d.objects.map((o) => ({ '@id': o })),
    ...(d.expiresAt
      ? { 'api:expiresAt': { '@type': 'http://www.w3.org/2001/XMLSchema#dateTime', '@value': d.expiresAt } }
      : {}),
  };
}

export function postDelegation(server: TestServer, who: PartnerName | 'holder', body: unknown): Promise<Response> {
  return as(server, who, '/access-delegations', {
    method: 'POST',
    headers: { 'Content-Type': 'application/ld+json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/** Asks for a delegation and returns the AccessDelegationRequest's URL (201 expected). */
export async function requestDelegation(
  server: TestServer,
  who: PartnerName | 'holder',
  d: DelegationFields,
): Promise<string> {
  const res = await postDelegation(server, who, delegationBody(d));
  expect(res.status, await res.clone().text()).to.equal(201);
  expect(res.headers.get('type')).to.equal(`${API}AccessDelegationRequest`);
  return res.headers.get('location')!;
}

export async function decide(
  server: TestServer,
  request: string,
  status: 'REQUEST_ACCEPTED' | 'REQUEST_REJECTED',
): Promise<Response> {
  return server.request(`${request}?status=${status}`, { method: 'PATCH' });
}

/** Asks for and accepts (as the holder) a delegation; returns the request URL. */
export async function delegate(server: TestServer, who: PartnerName | 'holder', d: DelegationFields): Promise<string> {
  const request = await requestDelegation(server, who, d);
  if ((await statusOf(server, request)) === 'REQUEST_PENDING') {
    const res = await decide(server, request, 'REQUEST_ACCEPTED');
    expect(res.status, await res.clone().text()).to.equal(204);
  }
  expect(await statusOf(server, request)).to.equal('REQUEST_ACCEPTED');
  return request;
}

export async function statusOf(server: TestServer, request: string): Promise<string> {
  const res = await server.request(request);
  expect(res.status).to.equal(200);
  const body = (await res.json()) as Record<string, { '@id': string } | string>;
  const status = body['api:hasRequestStatus'];
  return (typeof status === 'string' ? status : status['@id']).replace(/^api:/, '').replace(API, '');
}

/** A WAC authorisation body as IATA's ACL.json example has it. */
export function authorization(
  agent: string | undefined,
  accessTo: string[],
  modes: ('Read' | 'Write' | 'Append')[],
): Record<string, unknown> {
  return {
    '@type': `${ACL}Authorization`,
    ...(agent
      ? { [`${ACL}agent`]: { '@id': agent } }
      : { [`${ACL}agentClass`]: { '@id': `${ACL}AuthenticatedAgent` } }),
    [`${ACL}accessTo`]: accessTo.map((r) => ({ '@id': r })),
    [`${ACL}mode`]: modes.map((m) => ({ '@id': `${ACL}${m}` })),
  };
}

export async function grant(server: Pick<TestServer, 'request'>, body: Record<string, unknown>): Promise<string> {
  const res = await server.request('/internal/acl', {
    method: 'POST',
    headers: { 'Content-Type': 'application/ld+json' },
    body: JSON.stringify(body),
  });
  expect(res.status, await res.clone().text()).to.equal(201);
  return res.headers.get('location')!;
}
