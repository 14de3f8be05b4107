import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { answeredBy } from '../observability/request-log.js';
import type { ErrorAnswer } from './error-responses.js';
import type { RequestPipeline } from './pipeline.js';
import { OBJECT_ROUTE, OBJECTS_ROUTE, type ObjectHandlers } from './routes/logistics-objects.js';
import { ANSWERED } from './stage.js';

const OBJECTS_PATH = `${OBJECTS_ROUTE}/`;
/**
 * Ids the fast path takes: nothing to decode, no further segment, no query or fragment, so the id
 * is what express reads from the path. Other paths, whatever they are, go to express.
 */
const PLAIN_ID = /^[A-Za-z0-9._~-]+$/;

/** A request the fast path takes: the route that names it in logs and metrics, and its handler. */
interface Taken {
  route: string;
  handle: (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;
}

/** The route of a request the fast path answers, or undefined when express is to. */
function taken(handlers: ObjectHandlers, req: IncomingMessage): Taken | undefined {
  const url = req.url!;
  const method = req.method;
  if (url === OBJECTS_ROUTE) {
    return method === 'POST' ? { route: OBJECTS_ROUTE, handle: handlers.create } : undefined;
  }
  if (!url.startsWith(OBJECTS_PATH)) return undefined;
  const id = url.slice(OBJECTS_PATH.length);
  if (!PLAIN_ID.test(id)) return undefined;
  if (method === 'GET' || method === 'HEAD')
    return { route: OBJECT_ROUTE, handle: (q, s) => handlers.readLatest(q, s, id) };
  if (method === 'PATCH') return { route: OBJECT_ROUTE, handle: (q, s) => handlers.change(q, s, id) };
  return undefined;
}

/**
 * GET and HEAD of a Logistics Object's latest revision, POST /logistics-objects and PATCH of an
 * object, most of the traffic, answered without express, whose app and router cost such requests
 * more than the rest of their answer: the request pipeline's stages (pipeline.ts), then the route's
 * own handler, the one express calls too. Every other request goes to `app` untouched.
 */
export function withObjectFastPath(
  handlers: ObjectHandlers,
  pipeline: RequestPipeline,
  answerError: ErrorAnswer,
  app: RequestListener,
): RequestListener {
  return (req, res) => {
    const route = taken(handlers, req);
    if (route === undefined) return app(req, res);
    const handle = () => {
      answeredBy(res, route.route);
      return route.handle(req, res);
    };
    try {
      const passed = pipeline.runStages(req, res);
      // Most requests: a token verified before, an object not moved; no promise before the route.
      const answered =
        passed === undefined
          ? handle()
          : passed !== ANSWERED && passed.then((waited) => (waited === ANSWERED ? undefined : handle()));
      if (answered instanceof Promise) answered.catch((error: unknown) => answerError(error, res));
    } catch (error) {
      answerError(error, res);
    }
  };
}
