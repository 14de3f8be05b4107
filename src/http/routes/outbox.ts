import express, { type Router } from 'express';
import { callerOf, type Services } from '../context.js';
import { methodNotAllowed } from '../documents.js';
import { CONTENT_LANGUAGE } from '../negotiation.js';
import { queryValues } from '../query-params.js';

/** Operator routes of the notification outbox: queues, dead letters and their replay (JSON). */
export function outboxRoutes(services: Services): Router {
  const router = express.Router();
  const { access, delivery, deadLetters } = services;
  const json = (res: express.Response, body: unknown) =>
    res.status(200).setHeader('Content-Language', CONTENT_LANGUAGE).json(body);

  router.get('/internal/outbox/queues', (_req, res) => {
    access.check(callerOf(res), { kind: 'operate', what: 'reading the notification outbox' });
    // Behind a balancer, the process holding the delivery lease shows the queues; the others none.
    json(res, { queues: delivery.queueViews(), delivering: delivery.delivering });
  });
  router.get('/internal/outbox/dead-letters', async (_req, res) => {
    access.check(callerOf(res), { kind: 'operate', what: 'reading the notification outbox' });
    json(res, { deadLetters: await deadLetters.views() });
  });
  /** Replays every dead letter, or those named by `notification` (repeatable). */
  router.post('/internal/outbox/dead-letters/replay', async (req, res) => {
    access.check(callerOf(res), { kind: 'operate', what: 'replaying dead letters' });
    const named = queryValues(req, ['notification'])?.values;
    json(res, { replayed: await deadLetters.replay(named) });
  });
  router.all('/internal/outbox/queues', methodNotAllowed('GET, HEAD'));
  router.all('/internal/outbox/dead-letters', methodNotAllowed('GET, HEAD'));
  router.all('/internal/outbox/dead-letters/replay', methodNotAllowed('POST'));
  return router;
}
