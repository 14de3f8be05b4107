import { randomUUID } from 'node:crypto';
import type { Request, RequestHandler, Response } from 'express';
import type { Logger } from './logger.js';

/** What is known about a request once its answer is sent (or the connection closed). */
export interface FinishedRequest {
  id: string;
  method: string;
  /** The route pattern that answered (`/logistics-objects/:id`), or `unmatched`. */
  route: string;
  status: number;
  seconds: number;
  /** Whether the whole answer was sent (false: the client went away first). */
  completed: boolean;
}

/** A client's own request id is kept when it is short and plain; otherwise a new one is made. */
const CLIENT_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export function routeOf(req: Request): string {
  const route = (req as Request & { route?: { path: unknown } }).route;
  return route ? `${req.baseUrl}${String(route.path)}` : 'unmatched';
}

export function requestIdOf(res: Response): string | undefined {
  const id = res.getHeader('X-Request-Id');
  return typeof id === 'string' ? id : undefined;
}

/**
 * Gives each request an id (`X-Request-Id`, also on the answer) and hands every finished request
 * to `observers` (the log line, metrics).
 */
export function observeRequests(observers: ((req: Request, res: Response, finished: FinishedRequest) => void)[]): RequestHandler {
  return (req, res, next) => {
    const started = process.hrtime.bigint();
    const incoming = req.headers['x-request-id'];
    const id = typeof incoming === 'string' && CLIENT_REQUEST_ID.test(incoming) ? incoming : randomUUID();
    res.setHeader('X-Request-Id', id);
    // `on`, not `once`: a response emits 'close' once, and `once` wraps and unhooks the listener on each request.
    res.on('close', () => {
      const finished: FinishedRequest = {
        id,
        method: req.method,
        route: routeOf(req),
        status: res.statusCode,
        seconds: Number(process.hrtime.bigint() - started) / 1e9,
        completed: res.writableFinished,
      };
      for (const observe of observers) observe(req, res, finished);
    });
    next();
  };
}

/** One info line per request: id, method, route, path, status, latency, agent; never headers or bodies. */
export function requestLogLine(logger: Logger, agentOf: (res: Response) => string | undefined) {
  return (req: Request, res: Response, finished: FinishedRequest): void => {
    // The line is not even built when info lines are off (LOG_LEVEL=warn or above).
    if (!logger.isLevelEnabled('info')) return;
    logger.info(
      {
        reqId: finished.id,
        method: finished.method,
        route: finished.route,
        path: req.originalUrl.split('?', 1)[0],
        status: finished.status,
        ms: Math.round(finished.seconds * 1e6) / 1e3,
        agent: agentOf(res),
        ...(finished.completed ? {} : { aborted: true }),
      },
      'request',
    );
  };
}
