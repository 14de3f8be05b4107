import { HttpError } from '../errors.js';

export const SUPPORTED_API_VERSIONS = ['2.3.0', '2.2.0', '2.1.0', '2.0.0'] as const;
export const CONTENT_LANGUAGE = 'en-US';

export type ResponseFormat = 'jsonld' | 'turtle' | 'ntriples';

/** The media types each format answers to: the one it is served as first, then other names a client may use. */
const FORMAT_MEDIA_TYPES: Record<ResponseFormat, readonly string[]> = {
  jsonld: ['application/ld+json', 'application/json'],
  turtle: ['text/turtle', 'application/x-turtle'],
  ntriples: ['application/n-triples'],
};

export const CONTENT_TYPES: Record<ResponseFormat, string> = {
  jsonld: FORMAT_MEDIA_TYPES.jsonld[0],
  turtle: FORMAT_MEDIA_TYPES.turtle[0],
  ntriples: FORMAT_MEDIA_TYPES.ntriples[0],
};

/** One element of `Accept` (RFC 9110 12.5.1): a media range, its weight and its `version` parameter. */
export interface MediaRange {
  /** `type/subtype` in lower case: `*\/*`, `type/*` or a media type. */
  type: string;
  q: number;
  version?: string;
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** RFC 9110 12.4.2: 0 to 1 with at most three decimals. */
const QVALUE = /^(?:0(?:\.[0-9]{0,3})?|1(?:\.0{0,3})?)$/;

/** `text` cut at each `separator` outside a quoted string (RFC 9110 5.6.4). */
function splitOutsideQuotes(text: string, separator: ',' | ';'): string[] {
  const parts: string[] = [];
  let start = 0;
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted && c === '\\') i++;
    else if (c === '"') quoted = !quoted;
    else if (!quoted && c === separator) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  return parts;
}

const unquote = (value: string) =>
  value.length >= 2 && value.startsWith('"') && value.endsWith('"')
    ? value.slice(1, -1).replace(/\\(.)/g, '$1')
    : value;

/**
 * One element; undefined when it is not a media range or its weight is not a qvalue: such an
 * element says nothing reliable, so it is ignored. A parameter without `=` is ignored alone.
 */
function parseRange(element: string): MediaRange | undefined {
  const [range, ...params] = splitOutsideQuotes(element, ';').map((s) => s.trim());
  const slash = range.indexOf('/');
  const type = range.slice(0, slash);
  const subtype = range.slice(slash + 1);
  if (slash < 0 || !TOKEN.test(type) || !TOKEN.test(subtype) || (type === '*' && subtype !== '*')) return undefined;
  const parsed: MediaRange = { type: range.toLowerCase(), q: 1 };
  let weighted = false;
  for (const param of params) {
    const eq = param.indexOf('=');
    if (eq < 0) continue;
    const name = param.slice(0, eq).trim().toLowerCase();
    const value = param.slice(eq + 1).trim();
    if (name === 'q' && !weighted) {
      if (!QVALUE.test(value)) return undefined;
      parsed.q = Number(value);
      weighted = true;
    } else if (name === 'version') parsed.version = unquote(value);
  }
  return parsed;
}

/** The elements of an `Accept` value, empty ones left out (RFC 9110 5.6.1). */
const acceptElements = (header: string): string[] => splitOutsideQuotes(header, ',').filter((e) => e.trim() !== '');

/** How specifically `range` names an offer of `types`: its own name 3, `type/*` of its served type 2, `*\/*` 1. */
function specificity(range: MediaRange, types: readonly string[]): number {
  if (range.type === '*/*') return 1;
  if (range.type.endsWith('/*')) return types[0].startsWith(range.type.slice(0, -1)) ? 2 : 0;
  return types.includes(range.type) ? 3 : 0;
}

/** The range that sets an offer's weight: the most specific that matches it; of equally specific ones the heaviest. */
function decidingRange(ranges: readonly MediaRange[], types: readonly string[]): MediaRange | undefined {
  let deciding: MediaRange | undefined;
  let level = 0;
  for (const range of ranges) {
    const s = specificity(range, types);
    if (s > level || (s === level && s > 0 && range.q > deciding!.q)) {
      deciding = range;
      level = s;
    }
  }
  return deciding;
}

/**
 * The offer `accept` prefers by RFC 9110 12.5.1: an offer weighs the q of the most specific range matching it, so
 * `q=0` there excludes it whatever a wildcard says; ties, and an absent or empty `Accept`, go to the earlier offer
 * (the server's preference). `typesOf` names an offer's media types, the served one first. Undefined when none is
 * acceptable (ONE Record API, "Endpoints", Conventions).
 */
export function chooseOffer<T>(
  accept: string | undefined,
  offered: readonly T[],
  typesOf: (offer: T) => readonly string[],
): { offer: T; range?: MediaRange } | undefined {
  const elements = accept === undefined ? [] : acceptElements(accept);
  if (elements.length === 0) return { offer: offered[0] };
  const ranges = elements.flatMap((element) => parseRange(element) ?? []);
  let best: { offer: T; range: MediaRange } | undefined;
  for (const offer of offered) {
    const range = decidingRange(ranges, typesOf(offer));
    if (range && range.q > 0 && (!best || range.q > best.range.q)) best = { offer, range };
  }
  return best;
}

/** The API version served: the one asked for if supported, else the newest. */
export function apiVersion(requested: string | undefined): string {
  return requested && (SUPPORTED_API_VERSIONS as readonly string[]).includes(requested)
    ? requested
    : SUPPORTED_API_VERSIONS[0];
}

export interface Negotiated {
  format: ResponseFormat;
  version: string;
}

const ALL_FORMATS: readonly ResponseFormat[] = ['jsonld', 'turtle', 'ntriples'];
const formatMediaTypes = (format: ResponseFormat) => FORMAT_MEDIA_TYPES[format];

const mediaTypeOf = (format: ResponseFormat) => CONTENT_TYPES[format];

/** The format `Accept` prefers (`chooseOffer`), with the `version` of the range that decided; 406 when none fits. */
export function negotiate(accept: string | undefined, offered: readonly ResponseFormat[] = ALL_FORMATS): Negotiated {
  const choice = chooseOffer(accept, offered, formatMediaTypes);
  if (choice) return { format: choice.offer, version: apiVersion(choice.range?.version) };
  throw new HttpError(406, 'not_acceptable', {
    message: `none of the accepted media types can be served; available: ${offered.map(mediaTypeOf).join(', ')}`,
  });
}

export function contentTypeHeader(n: Negotiated): string {
  return `${CONTENT_TYPES[n.format]}; version=${n.version}`;
}
