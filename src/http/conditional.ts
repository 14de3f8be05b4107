import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { parseHttpDate } from './http-date.js';

/**
 * What a conditional GET or HEAD is checked against (RFC 9110 8.8): the representation's strong
 * entity tag and, where it covers everything the body shows, its last modification.
 */
export interface Validators {
  etag: string;
  lastModified?: Date;
}

/** A strong entity tag of `parts` (RFC 9110 8.8.3), each free of `"` and spaces. */
export const entityTag = (...parts: readonly (string | number)[]): string => `"${parts.join('-')}"`;

/** A strong entity tag of `content` (128 bits of its SHA-256) and of `parts` not in it, such as the API version. */
export const contentTag = (content: Buffer | string, ...parts: readonly (string | number)[]): string =>
  entityTag(createHash('sha256').update(content).digest('base64url').slice(0, 22), ...parts);

/** The opaque tags of an If-None-Match list, `W/` or not: weak comparison ignores the difference (RFC 9110 8.8.3.2). */
const OPAQUE_TAG = /(?:W\/)?("[^"]*")/g;

function listsTag(list: string, etag: string): boolean {
  for (const [, opaque] of list.matchAll(OPAQUE_TAG)) if (opaque === etag) return true;
  return false;
}

/**
 * Whether a GET or HEAD of a representation with `validators` is answered 304 (RFC 9110 13.2.2,
 * steps 3 and 4): If-None-Match, when present, decides alone (`*` matches the representation
 * there is); else If-Modified-Since, when it is a valid HTTP-date and the representation has a
 * last modification no later than it (to the second, as Last-Modified is sent).
 */
export function notModified(headers: IncomingHttpHeaders, validators: Validators): boolean {
  const noneMatch = headers['if-none-match'];
  if (noneMatch !== undefined) return noneMatch.trim() === '*' || listsTag(noneMatch, validators.etag);
  const since = headers['if-modified-since'];
  if (since === undefined || validators.lastModified === undefined) return false;
  const date = parseHttpDate(since);
  return date !== undefined && Math.floor(validators.lastModified.getTime() / 1000) * 1000 <= date;
}
