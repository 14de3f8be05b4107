import type { RequestHandler } from 'express';
import { badRequest } from '../errors.js';

/** Headers that must not be repeated: with two values, which one counts is a guess. */
const SINGLE_HEADERS = ['authorization', 'content-type', 'content-encoding'] as const;

/**
 * Refuses requests the routes would otherwise read by guessing: a path with malformed
 * percent-encoding (`%zz`, a lone `%`, bytes that are not UTF-8) and repeated single headers.
 */
export const checkRequestHead: RequestHandler = (req, _res, next) => {
  try {
    decodeURIComponent(req.path);
  } catch {
    throw badRequest('invalid_path', `the path ${JSON.stringify(req.path.slice(0, 200))} has malformed percent-encoding`);
  }
  for (const name of SINGLE_HEADERS) {
    if ((req.headersDistinct[name]?.length ?? 0) > 1) throw badRequest('repeated_header', `the ${name} header is given more than once`, name);
  }
  next();
};
