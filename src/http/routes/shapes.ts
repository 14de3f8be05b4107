import express, { type Router } from 'express';
import { shapesTurtle } from '../../shapes/validator.js';
import { negotiate } from '../negotiation.js';
import { sendRepresentation } from '../responses.js';

export interface ShapesRouteDeps {
  /** Whether writes are checked against the strict shapes (`validation.strict`). */
  strict: boolean;
  /** When the server started: the shapes last changed then. */
  startedAt: Date;
}

/** GET /shapes: the SHACL shapes this server checks writes against, so partners can validate before sending. */
export function shapesRoutes({ strict, startedAt }: ShapesRouteDeps): Router {
  const router = express.Router();
  const body = Buffer.from(shapesTurtle({ strict }));
  router.get('/shapes', (req, res) => {
    sendRepresentation(res, negotiate(req.headers.accept, ['turtle']), startedAt, {}, body);
  });
  return router;
}
