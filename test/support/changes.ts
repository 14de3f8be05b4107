import { expect } from 'chai';
import type { RevisionInfo } from '../../src/domain/objects/revision-index.js';
import { postJsonLd, type TestServer } from './server.js';

export const CARGO = 'https://onerecord.iata.org/ns/cargo#';
export const API = 'https://onerecord.iata.org/ns/api#';
export const XSD = 'http://www.w3.org/2001/XMLSchema#';
export const CHANGE_REQUEST_TYPE = `${API}ChangeRequest`;

export type Agent = 'holder' | 'other';
type Json = Record<string, unknown>;
/** What sends a request as an agent: a test server, or one process of a cluster. */
export type Requester = Pick<TestServer, 'request'>;

/** A Piece of about `extra` + 6 triples, with an embedded grossWeight. */
export function piece(extra = 0): Json {
  const body: Json = {
    '@context': { cargo: CARGO, xsd: XSD },
    '@type': 'cargo:Piece',
    'cargo:remarks': 'Books',
    'cargo:coload': false,
    'cargo:grossWeight': {
      '@type': 'cargo:Value',
      'cargo:unit': { '@id': 'https://onerecord.iata.org/ns/code-lists/MeasurementUnitCode#KGM' },
      'cargo:numericalValue': { '@type': 'xsd:double', '@value': '20.0' },
    },
  };
  if (extra > 0) body['cargo:shippingMarks'] = Array.from({ length: extra }, (_, i) => `mark ${i}`);
  return body;
}

export async function createObject(server: Requester, body: Json = piece()): Promise<string> {
  const res = await postJsonLd(server, '/logistics-objects', body);
  expect(res.status, await res.clone().text()).to.equal(201);
  return res.headers.get('location')!;
}

export interface Value {
  datatype: string;
  value: string;
}

export const str = (value: string): Value => ({ datatype: `${XSD}string`, value });
export const dbl = (value: string): Value => ({ datatype: `${XSD}double`, value });
export const bool = (value: boolean): Value => ({ datatype: `${XSD}boolean`, value: String(value) });
export const cls = (cargoClass: string, value: string): Value => ({ datatype: `${CARGO}${cargoClass}`, value });

export interface Op {
  op: 'ADD' | 'DELETE';
  s: string;
  p: string;
  o: Value[];
}

export const add = (s: string, p: string, ...o: Value[]): Op => ({
  op: 'ADD',
  s,
  p: p.includes('://') ? p : `${CARGO}${p}`,
  o,
});
export const del = (s: string, p: string, ...o: Value[]): Op => ({
  op: 'DELETE',
  s,
  p: p.includes('://') ? p : `${CARGO}${p}`,
  o,
});

/** An api:Change document in the shape of the official examples. */
export function change(object: string, revision: number, operations: Op[], extra: Json = {}): Json {
  return {
    '@context': {
      cargo: CARGO,
      api: API,
      xsd: XSD,
      'api:hasDatatype': { '@type': 'xsd:anyURI' },
      'api:p': { '@type': 'xsd:anyURI' },
    },
    '@type': 'api:Change',
    'api:hasLogisticsObject': { '@id': object },
    'api:hasDescription': 'test change',
    'api:hasOperation': operations.map((o) => ({
      '@type': 'api:Operation',
      'api:op': { '@id': `api:${o.op}` },
      'api:s': o.s,
      'api:p': o.p,
      'api:o': o.o.map((v) => ({
        '@type': 'api:OperationObject',
        'api:hasDatatype': v.datatype,
        'api:hasValue': v.value,
      })),
    })),
    'api:hasRevision': { '@type': 'xsd:positiveInteger', '@value': String(revision) },
    ...extra,
  };
}

export async function patch(
  server: Requester,
  object: string,
  body: unknown,
  agent: Agent = 'holder',
): Promise<Response> {
  return server.request(object, {
    method: 'PATCH',
    headers: { 'Content-Type': 'application/ld+json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    agent,
  });
}

/** PATCHes and expects a ChangeRequest to be created; returns its URI. */
export async function submit(
  server: TestServer,
  object: string,
  body: unknown,
  agent: Agent = 'holder',
): Promise<string> {
  const res = await patch(server, object, body, agent);
  expect(res.status, await res.clone().text()).to.equal(201);
  expect(res.headers.get('type')).to.equal(CHANGE_REQUEST_TYPE);
  return res.headers.get('location')!;
}

/** Every revision of `object` in the server's index, from 1 to the latest (the earlier ones read from the store). */
export async function revisionsOf(server: TestServer, object: string): Promise<RevisionInfo[]> {
  const { index } = server.running.services.objects;
  const entry = (await index.find(object))!;
  const revisions = await Promise.all(
    Array.from({ length: entry.latest.number }, (_, i) => index.revision(entry, i + 1)),
  );
  revisions.forEach((r, i) => {
    expect(r, `revision ${i + 1} of ${object}`).to.not.equal(undefined);
  });
  return revisions.map((r) => r!);
}

export async function readJson(server: Requester, path: string, agent: Agent = 'holder'): Promise<Json> {
  const res = await server.request(path, { agent });
  expect(res.status, await res.clone().text()).to.equal(200);
  return (await res.json()) as Json;
}

/** The short status (REQUEST_ACCEPTED) of an action request read over HTTP. */
export async function statusOf(server: Requester, request: string): Promise<string> {
  const body = await readJson(server, request);
  return ((body['api:hasRequestStatus'] as Json)['@id'] as string).replace(API, '');
}

/** The codes of the errors recorded on a request. */
export function errorCodes(request: Json): string[] {
  const errors = [request['api:hasError'] ?? []].flat() as Json[];
  return errors.flatMap((e) => [e['api:hasErrorDetail']].flat() as Json[]).map((d) => d['api:hasCode'] as string);
}

export const asList = <T>(value: T | T[] | undefined): T[] =>
  value === undefined ? [] : Array.isArray(value) ? value : [value];
