import type { IncomingMessage } from 'node:http';
import { badRequest } from '../errors.js';

/** Headers that must not be repeated: with two values, which one counts is a guess. */
const SINGLE_HEADERS = ['authorization', 'content-type', 'content-encoding'] as const;
const SINGLE_HEADER_LENGTHS = new Set<number>(SINGLE_HEADERS.map((name) => name.length));

/**
 * The first of SINGLE_HEADERS given more than once, read from the raw header lines: Node's
 * `headersDistinct` builds arrays of every header on each request, where only three names matter.
 */
export function repeatedSingleHeader(rawHeaders: string[]): string | undefined {
  let seen = 0;
  let repeated = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const raw = rawHeaders[i];
    // Names of other lengths are passed over without lowercasing: most of them.
    if (!SINGLE_HEADER_LENGTHS.has(raw.length)) continue;
    const index = SINGLE_HEADERS.indexOf(raw.toLowerCase() as (typeof SINGLE_HEADERS)[number]);
    if (index < 0) continue;
    const bit = 1 << index;
    if (seen & bit) repeated |= bit;
    seen |= bit;
  }
  // Named in SINGLE_HEADERS order, whatever the order of the lines.
  return repeated === 0 ? undefined : SINGLE_HEADERS.find((_, index) => repeated & (1 << index));
}

/**
 * Refuses requests the routes would otherwise read by guessing: a path with malformed
 * percent-encoding (`%zz`, a lone `%`, bytes that are not UTF-8) and repeated single headers.
 */
export function checkRequestHead(req: IncomingMessage): undefined {
  const url = req.url ?? '';
  const query = url.indexOf('?');
  const path = query < 0 ? url : url.slice(0, query);
  // Only a percent sign can make it malformed.
  if (path.includes('%')) {
    try {
      decodeURIComponent(path);
    } catch {
      throw badRequest('invalid_path', `the path ${JSON.stringify(path.slice(0, 200))} has malformed percent-encoding`);
    }
  }
  const repeated = repeatedSingleHeader(req.rawHeaders);
  if (repeated) throw badRequest('repeated_header', `the ${repeated} header is given more than once`, repeated);
  return undefined;
}
