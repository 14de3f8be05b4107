import type { Response } from 'express';
import { CONTENT_LANGUAGE, contentTypeHeader, type Negotiated } from './negotiation.js';

/** Headers every successful representation carries. */
export function setRepresentationHeaders(res: Response, negotiated: Negotiated, lastModified?: Date): Response {
  res.setHeader('Content-Type', contentTypeHeader(negotiated));
  res.setHeader('Content-Language', CONTENT_LANGUAGE);
  // The format follows Accept: a cache must not answer one format's request with another's.
  res.setHeader('Vary', 'Accept');
  if (lastModified) res.setHeader('Last-Modified', lastModified.toUTCString());
  return res;
}

/** 201 for a created resource: `Location` and `Type`, no body. */
export function sendCreated(res: Response, location: string, type: string): void {
  res.status(201).setHeader('Location', location).setHeader('Type', type).setHeader('Content-Language', CONTENT_LANGUAGE).end();
}

/**
 * 200 with a finished body and its headers in one `writeHead`: the hot GET path skips express's
 * `send` (type guessing, freshness checks) since the body and every header are known here.
 * HEAD gets the same headers; Node drops the body.
 */
export function sendRepresentation(res: Response, negotiated: Negotiated, lastModified: Date, extra: Record<string, string>, body: Buffer): void {
  res.writeHead(200, {
    'Content-Type': contentTypeHeader(negotiated),
    'Content-Language': CONTENT_LANGUAGE,
    'Last-Modified': lastModified.toUTCString(),
    'Content-Length': String(body.length),
    Vary: 'Accept',
    ...extra,
  });
  res.end(body);
}
