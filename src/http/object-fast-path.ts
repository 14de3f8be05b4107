import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Express, Request, Response } from 'express';
import type { Caller } from '../domain/access/authorizer.js';
import type { RequestObservation } from '../observability/request-log.js';
import { readBody } from './body.js';
import { admit, handOverVerification, type Services } from './context.js';
import { errorHandler } from './error-responses.js';
import { negotiate } from './negotiation.js';
import type { Representations } from './representations.js';
import { repeatedSingleHeader } from './request-checks.js';
import { notModified } from './conditional.js';
import { sendNotModified } from './responses.js';
import {
  changeObject,
  createObject,
  OBJECT_ROUTE,
  OBJECTS_ROUTE,
  objectValidators,
  sendObject,
} from './routes/logistics-objects.js';

const OBJECTS_PATH = `${OBJECTS_ROUTE}/`;
/**
 * Ids the fast path takes: nothing to decode, no further segment, no query or fragment, so the id
 * is what express reads from the path. Other paths, whatever they are, go to express.
 */
const PLAIN_ID = /^[A-Za-z0-9._~-]+$/;

/** The express application behind the fast path: what it answers, and the prototypes of its requests and responses. */
type ExpressApp = RequestListener & Pick<Express, 'request' | 'response'>;

/** What express's `app.handle` does before routing: the request and response get express's methods (`res.status`, `res.send`) and know each other. */
function enterExpress(app: ExpressApp, req: IncomingMessage, res: ServerResponse): [Request, Response] {
  const request = req as Request;
  const response = res as Response;
  request.res = response;
  response.req = request;
  Object.setPrototypeOf(req, app.request);
  Object.setPrototypeOf(res, app.response);
  response.locals ??= Object.create(null) as Response['locals'];
  return [request, response];
}

/**
 * GET and HEAD of a Logistics Object's latest revision (cached body or 304), POST /logistics-objects
 * and PATCH of an object, answered before express, whose machinery costs these requests more than
 * their own work (BENCHMARKS.md, `get.js` and `changes.js`).
 *
 * It runs the app's own checks, token, redirect, observation and route handlers, and hands anything
 * else to the app untouched. What the app adds for these requests must be added here too
 * (test/object-fast-path.test.ts compares the two).
 */
export function withObjectFastPath(
  services: Services,
  representations: Representations,
  observation: RequestObservation,
  app: ExpressApp,
): RequestListener {
  const { objects, verifier, access, moves, config, callerBudget } = services;
  const rawBody = readBody(config.limits.bodyBytes);
  const answerError = errorHandler(services.logger);

  /**
   * The caller of a request the fast path may take: its token verified before and, for a request
   * about object `id`, the object not moved. Undefined when the app is to answer (a check that
   * fails here runs again there, which answers its error).
   */
  const callerFor = (req: IncomingMessage, res: ServerResponse, id?: string): Caller | undefined => {
    try {
      const agent = verifier.verify(req.headers.authorization);
      if (typeof agent !== 'string') {
        // A token not seen before: authenticate, in the app, awaits this verification and answers its failure.
        agent.catch(() => undefined);
        handOverVerification(res, agent);
        return undefined;
      }
      const caller = access.caller(agent);
      // A moved object: the app answers its redirect, or the 403 or 404 of a caller who may not learn it.
      return id !== undefined && moves.any && moves.redirect(objects.objectsPrefix + id, '', caller)
        ? undefined
        : caller;
    } catch {
      return undefined;
    }
  };

  /** What a GET's answer needs, or undefined when the app is to answer. */
  const prepareRead = (req: IncomingMessage, res: ServerResponse, id: string) => {
    const caller = callerFor(req, res, id);
    if (!caller) return undefined;
    const negotiated = negotiate(req.headers.accept);
    const view = objects.readLatest(objects.objectsPrefix + id, caller);
    const validators = objectValidators(view, negotiated);
    // A 304 needs no body: answered here whether the body is cached or not.
    const unchanged = notModified(req.headers, validators);
    const body = unchanged ? undefined : representations.cached(view, negotiated.format);
    return (unchanged || body) && { caller, negotiated, view, etag: validators.etag, body };
  };

  const read = (req: IncomingMessage, res: ServerResponse, url: string, id: string): boolean => {
    let answer;
    try {
      answer = prepareRead(req, res, id);
    } catch {
      // The app runs the check that failed again and answers its error.
      return false;
    }
    // A caller past its budget: the app answers its 429.
    if (!answer || !admit(callerBudget, res, answer.caller)) return false;
    observation.start(req, res, url, OBJECT_ROUTE);
    if (answer.body) sendObject(res, answer.negotiated, answer.view, answer.etag, answer.body);
    else sendNotModified(res, answer.etag);
    return true;
  };

  /**
   * Takes a write from here on, if its caller's budget has room (else the app answers): its body is read as the
   * route reads it, then handled by `handle`; any error is answered by the app's error handler.
   */
  const write = (
    req: IncomingMessage,
    res: ServerResponse,
    url: string,
    route: string,
    caller: Caller,
    handle: (req: Request, res: Response) => Promise<void>,
  ): boolean => {
    if (!admit(callerBudget, res, caller)) return false;
    const [request, response] = enterExpress(app, req, res);
    observation.start(req, res, url, route);
    const fail = (error: unknown) => answerError(error, request, response, () => undefined);
    rawBody(request, response, (error?: unknown) => {
      if (error) fail(error);
      else handle(request, response).catch(fail);
    });
    return true;
  };

  const answered = (req: IncomingMessage, res: ServerResponse): boolean => {
    const url = req.url!;
    const method = req.method;
    if (method === 'POST') {
      if (url !== OBJECTS_ROUTE || repeatedSingleHeader(req.rawHeaders) !== undefined) return false;
      const caller = callerFor(req, res);
      return (
        caller !== undefined &&
        write(req, res, url, OBJECTS_ROUTE, caller, (request, response) => createObject(services, request, response))
      );
    }
    if (!url.startsWith(OBJECTS_PATH)) return false;
    const id = url.slice(OBJECTS_PATH.length);
    if (!PLAIN_ID.test(id) || repeatedSingleHeader(req.rawHeaders) !== undefined) return false;
    if (method === 'GET' || method === 'HEAD') return read(req, res, url, id);
    if (method !== 'PATCH') return false;
    const caller = callerFor(req, res, id);
    return (
      caller !== undefined &&
      write(req, res, url, OBJECT_ROUTE, caller, (request, response) => changeObject(services, id, request, response))
    );
  };

  return (req, res) => {
    if (!answered(req, res)) app(req, res);
  };
}
