import express, { type Router } from 'express';
import { shapesTurtle } from '../../shapes/validator.js';
import type { Services } from '../context.js';
import { negotiate } from '../negotiation.js';
import { sendRepresentation } from '../responses.js';

/** GET /shapes: the SHACL shapes this server checks writes against, so partners can validate before sending. */
export function shapesRoutes(services: Services): Router {
  const router = express.Router();
  const body = Buffer.from(shapesTurtle({ strict: services.config.validation.strict }));
  router.get('/shapes', (req, res) => {
    sendRepresentation(res, negotiate(req.headers.accept, ['turtle']), services.startedAt, {}, body);
  });
  return router;
}
