import { HttpError } from '../errors.js';

export const SUPPORTED_API_VERSIONS = ['2.3.0', '2.2.0', '2.1.0', '2.0.0'] as const;
export const CONTENT_LANGUAGE = 'en-US';

export type ResponseFormat = 'jsonld' | 'turtle' | 'ntriples';

const MEDIA_TYPES: Record<string, ResponseFormat> = {
  'application/ld+json': 'jsonld',
  'application/json': 'jsonld',
  'text/turtle': 'turtle',
  'application/x-turtle': 'turtle',
  'application/n-triples': 'ntriples',
};

export const CONTENT_TYPES: Record<ResponseFormat, string> = {
  jsonld: 'application/ld+json',
  turtle: 'text/turtle',
  ntriples: 'application/n-triples',
};

export interface AcceptEntry {
  type: string;
  q: number;
  version?: string;
}

export function parseAccept(header: string): AcceptEntry[] {
  return header
    .split(',')
    .map((part) => {
      const [type, ...params] = part.split(';').map((s) => s.trim());
      const entry: AcceptEntry = { type: type.toLowerCase(), q: 1 };
      for (const p of params) {
        const [name, value = ''] = p.split('=').map((s) => s.trim());
        if (name === 'q') entry.q = Number(value) || 0;
        if (name === 'version') entry.version = value.replace(/^"|"$/g, '');
      }
      return entry;
    })
    .filter((e) => e.type && e.q > 0)
    .sort((a, b) => b.q - a.q);
}

/** The API version served: the one asked for if supported, else the newest. */
export function apiVersion(requested: string | undefined): string {
  return requested && (SUPPORTED_API_VERSIONS as readonly string[]).includes(requested) ? requested : SUPPORTED_API_VERSIONS[0];
}

export interface Negotiated {
  format: ResponseFormat;
  version: string;
}

/** Picks the response format from `Accept`; 406 when none of the offered formats fits. */
export function negotiate(accept: string | undefined, offered: readonly ResponseFormat[] = ['jsonld', 'turtle', 'ntriples']): Negotiated {
  if (!accept || accept.trim() === '') return { format: offered[0], version: apiVersion(undefined) };
  for (const entry of parseAccept(accept)) {
    if (entry.type === '*/*' || entry.type === 'application/*') return { format: offered[0], version: apiVersion(entry.version) };
    const format = MEDIA_TYPES[entry.type];
    if (format && offered.includes(format)) return { format, version: apiVersion(entry.version) };
  }
  throw new HttpError(406, 'not_acceptable', {
    message: `none of the accepted media types can be served; available: ${offered.map((f) => CONTENT_TYPES[f]).join(', ')}`,
  });
}

export function contentTypeHeader(n: Negotiated): string {
  return `${CONTENT_TYPES[n.format]}; version=${n.version}`;
}
