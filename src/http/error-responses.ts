import type { ServerResponse } from 'node:http';
import type { ErrorRequestHandler } from 'express';
import { HttpError, INVALID_QUERY_TITLE } from '../errors.js';
import { apiErrorQuads } from '../domain/api-errors.js';
import { newEmbeddedIri } from '../domain/objects/new-objects.js';
import { withContext, writeJsonLdNode, type JsonObject } from '../rdf/jsonld-writer.js';
import type { Logger } from '../observability/logger.js';
import { requestIdOf } from '../observability/request-log.js';
import { StoreConflictError, StoreFailedError, StoreFullError, StoreUnavailableError } from '../store/errors.js';
import { QueryError } from '../store/query-errors.js';
import { CONTENT_LANGUAGE, apiVersion } from './negotiation.js';

/**
 * The api:Error node of an answer, with an `internal:` id (as IATA's error examples), written by the
 * same JSON-LD writer as every stored resource; `hasErrorDetail` is always a list, as in those
 * examples (ONE Record API, "Errors").
 */
export function errorDocument(error: HttpError): JsonObject {
  const iri = newEmbeddedIri();
  const node = writeJsonLdNode({ iri, triples: apiErrorQuads(error, iri) });
  node['api:hasErrorDetail'] = [node['api:hasErrorDetail']].flat();
  return node;
}

/**
 * Every 503 says what it is: a pause (starting, a store or key set out of reach, a queue full); a
 * client may retry after this long. A start is over in seconds and its 503 costs nothing to send
 * again, where an engine or key set out of reach is seldom back that soon. A 429 (a caller past its
 * share) likewise: its requests in flight are answered within the second, its queries seldom.
 */
const retryAfterSeconds = (error: HttpError) => (error.code === 'starting' || error.code === 'caller_busy' ? 1 : 5);

/** The api:Error answer: JSON-LD in UTF-8, its length given, no body for HEAD (Node drops it). */
export function sendError(res: ServerResponse, error: HttpError): void {
  if (error.status === 401) res.setHeader('WWW-Authenticate', 'Bearer');
  if (error.status === 503 || error.status === 429) res.setHeader('Retry-After', String(retryAfterSeconds(error)));
  const body = Buffer.from(withContext(errorDocument(error)));
  res.statusCode = error.status;
  res.setHeader('Content-Type', `application/ld+json; version=${apiVersion(undefined)}; charset=utf-8`);
  res.setHeader('Content-Language', CONTENT_LANGUAGE);
  res.setHeader('Content-Length', body.length);
  res.end(body);
}

/**
 * The 409 of a write another server process came first to, as the same write refused by this
 * process's claims answers.
 */
function conflictError({ slot, resource }: StoreConflictError): HttpError {
  switch (slot) {
    case 'object':
      return new HttpError(409, 'object_exists', {
        message: `a Logistics Object with @id ${resource} already exists`,
        resource,
      });
    case 'revision':
      return new HttpError(409, 'revision_conflict', {
        message: 'another change of this revision was written first',
        resource,
      });
    case 'request':
      return new HttpError(409, 'request_busy', {
        message: 'another status change of this action request was written first; retry',
        resource,
      });
    // Not the client's conflict: two processes numbered a notification alike at the same moment; the
    // retry's number follows the other's.
    case 'outbox':
      return new HttpError(503, 'storage_busy', {
        message:
          'another server process queued a notification under the same number at the same moment; ' +
          'nothing was changed, try again',
      });
  }
}

/** A SPARQL query's failure: the query's own fault 400, the server's means to answer it now 503. */
function queryError({ failure, code, message }: QueryError): HttpError {
  if (failure === 'invalid' || failure === 'failed')
    return new HttpError(400, code, { message, property: 'query' }, INVALID_QUERY_TITLE);
  return new HttpError(503, code, { message });
}

/** Turns anything thrown by a route into an api:Error response; the one place that does. */
export function toHttpError(err: unknown): HttpError {
  if (err instanceof HttpError) return err;
  if (err instanceof StoreUnavailableError) {
    return new HttpError(503, 'storage_unavailable', {
      message:
        'the store could not be reached, or the change could not be stored durably; ' +
        'nothing was changed, try again later',
    });
  }
  if (err instanceof StoreFullError) return new HttpError(507, 'store_full', { message: err.message });
  if (err instanceof StoreConflictError) return conflictError(err);
  if (err instanceof StoreFailedError) return new HttpError(503, 'store_failed', { message: err.message });
  if (err instanceof QueryError) return queryError(err);
  return new HttpError(500, 'internal_error', { message: 'an unexpected error occurred' });
}

/** Answers whatever a request's handling threw as its api:Error (5xx logged); the one place that does. */
export type ErrorAnswer = (err: unknown, res: ServerResponse) => void;

export function errorAnswer(logger: Logger): ErrorAnswer {
  return (err, res) => {
    const error = toHttpError(err);
    if (error.status >= 500) {
      if (err instanceof HttpError || err instanceof QueryError) {
        // Foreseen (starting, a key set out of reach): no stack.
        logger.warn(
          { reqId: requestIdOf(res), code: error.code, status: error.status },
          error.details[0]?.message ?? error.code,
        );
      } else {
        // Only the error's message and stack: errors from body parsing carry the body as a property.
        const cause = err instanceof Error ? { message: err.message, stack: err.stack } : { message: String(err) };
        logger.error({ reqId: requestIdOf(res), code: error.code, err: cause }, `error ${error.code}`);
      }
    }
    if (res.headersSent) {
      res.end();
      return;
    }
    sendError(res, error);
  };
}

/** `errorAnswer` as express's error handler. */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  const answer = errorAnswer(logger);
  return (err: unknown, _req, res, _next) => answer(err, res);
}
