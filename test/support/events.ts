import { CARGO, CODE_LISTS, XSD } from '../../src/rdf/vocab.js';
import { postJsonLd, type TestServer } from './server.js';

export const STATUS_CODE = `${CODE_LISTS}StatusCode#`;

/** Creates a Logistics Object as the holder (with the given @id if any) and returns its IRI. */
export async function createObject(server: TestServer, type = 'cargo:Shipment', iri?: string): Promise<string> {
  const res = await postJsonLd(server, '/logistics-objects', {
    '@context': { cargo: CARGO },
    ...(iri ? { '@id': iri } : {}),
    '@type': type,
    'cargo:goodsDescription': 'events test',
  });
  if (res.status !== 201) throw new Error(`object not created: ${res.status} ${await res.text()}`);
  return res.headers.get('location')!;
}

export interface EventFields {
  code?: string;
  eventDate?: string;
  creationDate?: string;
  [property: string]: unknown;
}

/** A compact JSON-LD LogisticsEvent: `code` is a StatusCode short code, dates are xsd:dateTime. */
export function eventJson({
  code = 'DEP',
  eventDate = '2024-05-01T10:00:00Z',
  creationDate,
  ...rest
}: EventFields = {}): Record<string, unknown> {
  const dateTime = (value: string) => ({ '@type': `${XSD}dateTime`, '@value': value });
  return {
    '@context': { cargo: CARGO },
    '@type': 'cargo:LogisticsEvent',
    'cargo:eventDate': dateTime(eventDate),
    ...(creationDate ? { 'cargo:creationDate': dateTime(creationDate) } : {}),
    'cargo:eventCode': { '@id': `${STATUS_CODE}${code}` },
    ...rest,
  };
}

export function postEvent(
  server: TestServer,
  objectIri: string,
  body: unknown,
  agent: 'holder' | 'other' = 'holder',
): Promise<Response> {
  return postJsonLd(server, `${objectIri}/logistics-events`, body, agent);
}

export interface ErrorDetail {
  code: string;
  message: string;
  property?: string;
}

/** The details of an api:Error response body. */
export async function errorDetails(res: Response): Promise<ErrorDetail[]> {
  const body = (await res.json()) as Record<string, unknown>;
  if (body['@type'] !== 'api:Error') throw new Error(`not an api:Error: ${JSON.stringify(body)}`);
  const raw = body['api:hasErrorDetail'] as Record<string, unknown>[];
  return raw.map((d) => ({
    code: d['api:hasCode'] as string,
    message: d['api:hasMessage'] as string,
    property: (d['api:hasProperty'] as { '@value': string } | undefined)?.['@value'],
  }));
}

/** hasItem as a list, whatever its compaction (absent, one object, array). */
export function items(collection: Record<string, unknown>): Record<string, unknown>[] {
  const raw = collection['api:hasItem'];
  if (raw === undefined) return [];
  return (Array.isArray(raw) ? raw : [raw]) as Record<string, unknown>[];
}
