import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from './logger.js';

/** What is known about a request once its answer is sent (or the connection closed). */
export interface FinishedRequest {
  id: string;
  method: string;
  /** The route pattern that answered (`/logistics-objects/:id`), or `unmatched`. */
  route: string;
  /** The request target as the client sent it, query included. */
  url: string;
  status: number;
  seconds: number;
  /** Whether the whole answer was sent (false: the client went away first). */
  completed: boolean;
}

/** Told of every finished request: the log line, metrics. */
export type RequestObserver = (res: ServerResponse, finished: FinishedRequest) => void;

/** A client's own request id is kept when it is short and plain; otherwise a new one is made. */
const CLIENT_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

const ROUTE = Symbol('route');
/** What express leaves on a request its router matched, and what `answeredBy` leaves on a response. */
type Routed = IncomingMessage & { route?: { path: unknown }; baseUrl?: string; originalUrl?: string };

/** Names the route that answers a request express does not route (src/http/object-fast-path.ts). */
export function answeredBy(res: ServerResponse, route: string): void {
  (res as ServerResponse & { [ROUTE]?: string })[ROUTE] = route;
}

/** The route pattern that answered (`/logistics-objects/:id`), or `unmatched`. */
export function routeOf(req: IncomingMessage, res: ServerResponse): string {
  const named = (res as ServerResponse & { [ROUTE]?: string })[ROUTE];
  if (named !== undefined) return named;
  const { route, baseUrl } = req as Routed;
  return route ? `${baseUrl ?? ''}${String(route.path)}` : 'unmatched';
}

export function requestIdOf(res: ServerResponse): string | undefined {
  const id = res.getHeader('X-Request-Id');
  return typeof id === 'string' ? id : undefined;
}

/**
 * Gives each request an id (`X-Request-Id`, also on the answer) and hands every finished request
 * to the observers, the route read once the answer is finished (express names it on the way).
 */
export class RequestObservation {
  constructor(private readonly observers: readonly RequestObserver[]) {}

  /** Observes one request from now on: a stage of the request pipeline (src/http/pipeline.ts). */
  start(req: IncomingMessage, res: ServerResponse): undefined {
    const started = performance.now();
    // The request target as it came, whatever express's routers later make of `req.url`.
    const url = (req as Routed).originalUrl ?? req.url!;
    const incoming = req.headers['x-request-id'];
    const id = typeof incoming === 'string' && CLIENT_REQUEST_ID.test(incoming) ? incoming : randomUUID();
    res.setHeader('X-Request-Id', id);
    // `on`, not `once`: a response emits 'close' once, and `once` wraps and unhooks the listener on each request.
    res.on('close', () => {
      const finished: FinishedRequest = {
        id,
        method: req.method!,
        route: routeOf(req, res),
        url,
        status: res.statusCode,
        seconds: (performance.now() - started) / 1e3,
        completed: res.writableFinished,
      };
      for (const observe of this.observers) observe(res, finished);
    });
    return undefined;
  }
}

/** One info line per request: id, method, route, path, status, latency, agent; never headers or bodies. */
export function requestLogLine(logger: Logger, agentOf: (res: ServerResponse) => string | undefined): RequestObserver {
  return (res, finished) => {
    // The line is not even built when info lines are off (LOG_LEVEL=warn or above).
    if (!logger.isLevelEnabled('info')) return;
    logger.info(
      {
        reqId: finished.id,
        method: finished.method,
        route: finished.route,
        path: finished.url.split('?', 1)[0],
        status: finished.status,
        ms: Math.round(finished.seconds * 1e6) / 1e3,
        agent: agentOf(res),
        ...(finished.completed ? {} : { aborted: true }),
      },
      'request',
    );
  };
}
