import express, { type Request, type Router } from 'express';
import { HttpError, badRequest } from '../../errors.js';
import type { MoveRecord } from '../../store/schema/moved-objects.js';
import type { Authorizer } from '../../domain/access/authorizer.js';
import type { MovedObjects } from '../../domain/moves/moved-objects.js';
import { callerOf } from '../context.js';
import { readBody } from '../body.js';
import { methodNotAllowed } from '../documents.js';
import { CONTENT_LANGUAGE } from '../negotiation.js';

export interface MovedObjectRouteDeps {
  moves: MovedObjects;
  objectsPrefix: string;
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

export interface InternalMoveRouteDeps extends MovedObjectRouteDeps {
  access: Authorizer;
}

/** /internal/moves: internal actors mark Logistics Objects as moved, list the moves, and undo them. */
export function internalMoveRoutes({ moves, objectsPrefix, access }: InternalMoveRouteDeps): Router {
  const router = express.Router();
  const objectOf = (req: Request) => objectsPrefix + (req.params.id as string);
  const json = (res: express.Response, value: unknown) =>
    res.setHeader('Content-Language', CONTENT_LANGUAGE).json(value);

  // Checked before any body is read, so others learn nothing from how a body is judged.
  router.use('/internal/moves', (_req, res, next) => {
    access.check(callerOf(res), { kind: 'operate', what: 'managing moved objects' });
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
