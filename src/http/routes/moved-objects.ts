import express, { type Request, type RequestHandler, type Router } from 'express';
import { HttpError, badRequest } from '../../errors.js';
import type { MoveRecord } from '../../store/schema/moved-objects.js';
import { callerOf, type Services } from '../context.js';
import { readBody } from '../body.js';
import { methodNotAllowed } from '../documents.js';
import { CONTENT_LANGUAGE } from '../negotiation.js';

/** The path under a mounted `/logistics-objects/:id` and the query, as they follow the object's URL. */
function pathUnderObject(req: Request): string {
  if (req.url === '/') return '';
  return req.url.startsWith('/?') ? req.url.slice(1) : req.url;
}

/**
 * 301/302 with `Location` and no body for every method on a moved object, its audit trail and its
 * events (ONE Record API, "Endpoints", Conventions; docs/behaviour.md, "Moved objects"); mounted before the routes that answer for those paths.
 */
export function movedObjectRedirects(services: Services): RequestHandler {
  const router = express.Router();
  router.use('/logistics-objects/:id', (req, res, next) => {
    const redirect = services.moves.redirect(
      services.objects.objectsPrefix + (req.params.id as string),
      pathUnderObject(req),
      callerOf(res),
    );
    if (!redirect) return next();
    res
      .status(redirect.status)
      .setHeader('Location', redirect.location)
      .setHeader('Content-Language', CONTENT_LANGUAGE)
      .end();
  });
  // Entered only while some object is moved: every GET of an object would otherwise pass through
  // a router that does not answer it (a match, its allocations, and a setImmediate on the way out).
  return (req, res, next) => (services.moves.any ? router(req, res, next) : next());
}

const moveJson = (m: MoveRecord) => ({
  object: m.object,
  location: m.location,
  permanent: m.permanent,
  movedAt: m.movedAt.toISOString(),
  movedBy: m.movedBy,
});

/** `{ "location": "<absolute URL>", "permanent": true|false }` (permanent by default). */
function readMoveBody(req: Request): { location: string; permanent: boolean } {
  if (!req.is('application/json'))
    throw new HttpError(415, 'unsupported_content_type', { message: 'send the move as application/json' });
  let body: { location?: unknown; permanent?: unknown } | null;
  try {
    body = JSON.parse((req.body as Buffer).toString('utf8')) as typeof body;
  } catch {
    throw badRequest('invalid_move', 'the body is not JSON');
  }
  if (typeof body?.location !== 'string')
    throw badRequest('invalid_move', 'location (an absolute URL) is required', 'location');
  if (body.permanent !== undefined && typeof body.permanent !== 'boolean')
    throw badRequest('invalid_move', 'permanent must be true or false', 'permanent');
  return { location: body.location, permanent: body.permanent ?? true };
}

/** /internal/moves: internal actors mark Logistics Objects as moved, list the moves, and undo them. */
export function internalMoveRoutes(services: Services): Router {
  const router = express.Router();
  const { moves, objects } = services;
  const objectOf = (req: Request) => objects.objectsPrefix + (req.params.id as string);
  const json = (res: express.Response, value: unknown) =>
    res.setHeader('Content-Language', CONTENT_LANGUAGE).json(value);

  // Checked before any body is read, so others learn nothing from how a body is judged.
  router.use('/internal/moves', (_req, res, next) => {
    services.access.check(callerOf(res), { kind: 'operate', what: 'managing moved objects' });
    next();
  });
  router.get('/internal/moves', (_req, res) => {
    json(res, moves.list(callerOf(res)).map(moveJson));
  });
  router.get('/internal/moves/:id', (req, res) => {
    json(res, moveJson(moves.get(objectOf(req), callerOf(res))));
  });
  router.put('/internal/moves/:id', readBody(16 * 1024), async (req, res) => {
    const { location, permanent } = readMoveBody(req);
    json(res, moveJson(await moves.move(objectOf(req), location, permanent, callerOf(res))));
  });
  router.delete('/internal/moves/:id', async (req, res) => {
    await moves.restore(objectOf(req), callerOf(res));
    res.status(204).setHeader('Content-Language', CONTENT_LANGUAGE).end();
  });
  router.all('/internal/moves', methodNotAllowed('GET, HEAD'));
  router.all('/internal/moves/:id', methodNotAllowed('GET, HEAD, PUT, DELETE'));
  return router;
}
