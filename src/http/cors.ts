import type { RequestListener, ServerResponse } from 'node:http';
import { REPLICA_LAG_HEADER, TRUNCATED_HEADER } from './routes/sparql.js';

/** Every method a route of the API answers. */
const ALLOWED_METHODS = 'GET, HEAD, POST, PUT, PATCH, DELETE';
/** The request headers the API reads that are not always safe to send (Fetch, "CORS-safelisted request-header"). */
const ALLOWED_HEADERS = [
  'Authorization',
  'Content-Type',
  'Accept',
  'Content-Encoding',
  'Idempotency-Key',
  'If-None-Match',
  'If-Modified-Since',
  'X-Request-Id',
].join(', ');
/** The API's response headers a page reads only if named here (Fetch, "CORS-safelisted response-header name"). */
const EXPOSED_HEADERS = [
  'Location',
  'Type',
  'Revision',
  'Latest-Revision',
  'ETag',
  'Allow',
  'Retry-After',
  'WWW-Authenticate',
  'X-Request-Id',
  TRUNCATED_HEADER,
  REPLICA_LAG_HEADER,
].join(', ');
/** How long a browser may reuse a preflight's answer: Chromium's cap. The lists above change only with the server. */
const PREFLIGHT_MAX_AGE_SECONDS = '7200';

/**
 * CORS (Fetch standard, "CORS protocol"): web pages of `allowedOrigins` (`*`: any) may call the API
 * from a browser. Wraps the whole listener, so that every answer (the fast path's, errors) carries the
 * headers and a preflight is answered before any token is asked for; with no origin, the listener as is.
 */
export function withCors(allowedOrigins: readonly string[], listener: RequestListener): RequestListener {
  if (allowedOrigins.length === 0) return listener;
  const anyOrigin = allowedOrigins.includes('*');
  const allowed = new Set(allowedOrigins);
  return (req, res) => {
    const origin = req.headers.origin;
    if (origin === undefined) return listener(req, res);
    const allowOrigin = anyOrigin ? '*' : allowed.has(origin) ? origin : undefined;
    if (req.method === 'OPTIONS' && req.headers['access-control-request-method'] !== undefined) {
      answerPreflight(res, allowOrigin, !anyOrigin);
      return;
    }
    if (allowOrigin !== undefined) {
      res.setHeader('Access-Control-Allow-Origin', allowOrigin);
      res.setHeader('Access-Control-Expose-Headers', EXPOSED_HEADERS);
    }
    // With a list of origins, whether the answer may be read depends on Origin: caches must key on it.
    if (!anyOrigin) varyOnOrigin(res);
    listener(req, res);
  };
}

/**
 * 204 with what a page of an allowed origin may send; for any other origin 403 without CORS headers,
 * which the browser takes as a refusal (it never shows a preflight's answer to the page).
 */
function answerPreflight(res: ServerResponse, allowOrigin: string | undefined, vary: boolean): void {
  if (vary) res.setHeader('Vary', 'Origin');
  if (allowOrigin === undefined) {
    res.writeHead(403, { 'Content-Length': '0' }).end();
    return;
  }
  res.setHeader('Access-Control-Allow-Origin', allowOrigin);
  res.setHeader('Access-Control-Allow-Methods', ALLOWED_METHODS);
  res.setHeader('Access-Control-Allow-Headers', ALLOWED_HEADERS);
  res.setHeader('Access-Control-Max-Age', PREFLIGHT_MAX_AGE_SECONDS);
  res.writeHead(204).end();
}

/** Adds `Origin` to the answer's `Vary` as its head is written: routes set `Vary: Accept`, replacing any before. */
function varyOnOrigin(res: ServerResponse): void {
  const writeHead = res.writeHead;
  res.writeHead = function (this: ServerResponse, ...args: Parameters<ServerResponse['writeHead']>) {
    const vary = this.getHeader('Vary');
    this.setHeader('Vary', vary === undefined ? 'Origin' : `${String(vary)}, Origin`);
    return writeHead.apply(this, args);
  } as ServerResponse['writeHead'];
}
