import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { RequestObservation } from '../observability/request-log.js';
import { admit, handOverVerification, type Services } from './context.js';
import { negotiate } from './negotiation.js';
import type { Representations } from './representations.js';
import { repeatedSingleHeader } from './request-checks.js';
import { OBJECT_ROUTE, sendObject } from './routes/logistics-objects.js';

const OBJECTS_PATH = '/logistics-objects/';
/**
 * Ids the fast path takes: nothing to decode, no further segment, no query or fragment, so the id
 * is what express reads from the path. Other paths, whatever they are, go to express.
 */
const PLAIN_ID = /^[A-Za-z0-9._~-]+$/;

/**
 * GET and HEAD of a Logistics Object's latest revision, answered before express when the answer is
 * a 200 whose body is cached: most reads of an object. Why: express's app and router machinery cost
 * such a GET more than the rest of its answer (BENCHMARKS.md, `get.js`).
 *
 * It runs what the app runs for these requests, with the same functions: the request checks,
 * the token, the moved-object redirect, content negotiation, access control, then the request id,
 * log and metrics and the answer of the route (`sendObject`). Until it answers it changes nothing
 * anyone can see: anything else (a check that fails, a query string, a token not verified before,
 * a moved object, a body not cached yet) goes to the app untouched, which answers it as before,
 * errors included. What is added to the app for these requests must be added here too:
 * test/object-get-fast-path.test.ts compares this path's answers with the app's.
 */
export function withObjectGetFastPath(services: Services, representations: Representations, observation: RequestObservation, app: RequestListener): RequestListener {
  const { objects, verifier, access, moves } = services;

  /** What the answer needs, or undefined when the app is to answer. */
  const prepare = (req: IncomingMessage, res: ServerResponse, id: string) => {
    const agent = verifier.verify(req.headers.authorization);
    if (typeof agent !== 'string') {
      // A token not seen before: authenticate, in the app, awaits this verification and answers its failure.
      agent.catch(() => undefined);
      handOverVerification(res, agent);
      return undefined;
    }
    const caller = access.caller(agent);
    const iri = objects.objectsPrefix + id;
    if (moves.any && moves.redirect(iri, '', caller)) return undefined;
    const negotiated = negotiate(req.headers.accept);
    const view = objects.readLatest(iri, caller);
    const body = representations.cached(view, negotiated.format);
    return body && { caller, negotiated, view, body };
  };

  const answered = (req: IncomingMessage, res: ServerResponse): boolean => {
    const url = req.url!;
    if ((req.method !== 'GET' && req.method !== 'HEAD') || !url.startsWith(OBJECTS_PATH)) return false;
    const id = url.slice(OBJECTS_PATH.length);
    if (!PLAIN_ID.test(id) || repeatedSingleHeader(req.rawHeaders) !== undefined) return false;
    let answer;
    try {
      answer = prepare(req, res, id);
    } catch {
      // The app runs the check that failed again and answers its error.
      return false;
    }
    if (!answer) return false;
    admit(res, answer.caller);
    observation.start(req, res, url, OBJECT_ROUTE);
    sendObject(res, answer.negotiated, answer.view, answer.body);
    return true;
  };

  return (req, res) => {
    if (!answered(req, res)) app(req, res);
  };
}
