import type { ServerResponse } from 'node:http';
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

/**
 * 304 Not Modified (RFC 9110 15.4.5): of the headers the 200 would carry, those a cache updates its
 * copy from (`ETag`, `Vary`; `Date` comes from Node), and no body.
 */
export function sendNotModified(res: ServerResponse, etag: string): void {
  res.setHeader('ETag', etag);
  res.setHeader('Vary', 'Accept');
  res.writeHead(304);
  res.end();
}

/** 201 for a created resource: `Location` and `Type`, no body (ONE Record API, "Endpoints", Conventions). */
export function sendCreated(res: ServerResponse, location: string, type: string): void {
  res.statusCode = 201;
  res.setHeader('Location', location).setHeader('Type', type).setHeader('Content-Language', CONTENT_LANGUAGE).end();
}

/** `Last-Modified` values, per instant: the instants are the index's own Date objects, read again by every GET. */
const httpDates = new WeakMap<Date, string>();

function httpDate(date: Date): string {
  let text = httpDates.get(date);
  if (text === undefined) {
    text = date.toUTCString();
    httpDates.set(date, text);
  }
  return text;
}

/**
 * 200 with a finished body and its headers: the hot GET path skips express's `send` (type
 * guessing, freshness checks) since the body and every header are known here. Each header is set
 * on its own rather than handed to `writeHead` as an object: with `X-Request-Id` set before, Node
 * sets each of those one by one anyway. HEAD gets the same headers; Node drops the body.
 */
export function sendRepresentation(
  res: ServerResponse,
  negotiated: Negotiated,
  lastModified: Date,
  extra: Record<string, string>,
  body: Buffer,
): void {
  res.setHeader('Content-Type', contentTypeHeader(negotiated));
  res.setHeader('Content-Language', CONTENT_LANGUAGE);
  res.setHeader('Last-Modified', httpDate(lastModified));
  res.setHeader('Content-Length', body.length);
  res.setHeader('Vary', 'Accept');
  for (const name in extra) res.setHeader(name, extra[name]);
  res.writeHead(200);
  res.end(body);
}
