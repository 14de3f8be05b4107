import type { IncomingMessage, ServerResponse } from 'node:http';
import express, { type RequestHandler } from 'express';
import { HttpError } from '../errors.js';
import { CallerBudget } from './caller-budget.js';

interface BodyReadError {
  type?: string;
  encoding?: string;
}

/** What went wrong while reading a body, as the answer the client gets; never a 500. */
function bodyReadError(err: BodyReadError): HttpError {
  switch (err.type) {
    case 'entity.too.large':
      return new HttpError(413, 'body_too_large', { message: 'the request body is larger than the configured limit' });
    case 'encoding.unsupported':
      return new HttpError(415, 'unsupported_content_encoding', {
        message:
          `Content-Encoding ${JSON.stringify(String(err.encoding ?? '').slice(0, 50))} is not supported; ` +
          'send the body as is, or with gzip, deflate or br',
      });
    case 'request.aborted':
      return new HttpError(400, 'request_aborted', { message: 'the request was aborted' });
    case 'charset.unsupported':
      return new HttpError(415, 'unsupported_charset', {
        message: "the request body's charset is not supported; send it as UTF-8",
      });
    case 'parameters.too.many':
      return new HttpError(413, 'body_too_large', { message: 'the form has more fields than this server reads' });
    case 'request.size.invalid':
      return new HttpError(400, 'unreadable_body', {
        message: 'the request body does not have the length its Content-Length says',
      });
    default:
      // zlib's errors: a body that is not in the format its Content-Encoding names.
      return new HttpError(400, 'unreadable_body', {
        message: 'the request body could not be read: it is not encoded as its Content-Encoding says',
      });
  }
}

/** A request whose body `readBody` has read. */
export type BodyRequest = IncomingMessage & { body?: unknown };

/**
 * A body reader over Node's request and response: express mounts it as middleware, and the object
 * fast path calls it as it is.
 */
export type BodyReader = (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void;

/** `parser` with its errors (too large, an encoding it cannot read, ...) turned into the answers above. */
export function answeringReadErrors(parser: BodyReader): BodyReader {
  return (req, res, next) =>
    parser(req, res, (err?: unknown) => next(err === undefined ? undefined : bodyReadError(err as BodyReadError)));
}

/** `parser`, once the caller's budget has room for the body (429 otherwise), which counts it until the answer. */
export function withinCallerBudget(parser: BodyReader): BodyReader {
  return (req, res, next) => {
    const refused = CallerBudget.countBody(req, res);
    if (refused) next(refused);
    else parser(req, res, next);
  };
}

const EMPTY = Buffer.alloc(0);

/**
 * Reads the body as bytes (decompressed by its Content-Encoding, within `limitBytes`) into
 * `req.body`; a request without one (neither Content-Length nor Transfer-Encoding, which
 * body-parser skips) gets an empty Buffer, refused as the empty body it is.
 */
export function readBody(limitBytes: number): BodyReader {
  const raw = withinCallerBudget(answeringReadErrors(express.raw({ type: () => true, limit: limitBytes })));
  return (req, res, next) =>
    raw(req, res, (err?: unknown) => {
      (req as BodyRequest).body ??= EMPTY;
      next(err);
    });
}

/** Reads an application/x-www-form-urlencoded body (decompressed likewise) into `req.body` as an object of strings. */
export function readForm(limitBytes: number): RequestHandler {
  return answeringReadErrors(express.urlencoded({ extended: false, limit: limitBytes }));
}
