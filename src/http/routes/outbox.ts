import express, { type Router } from 'express';
import type { Authorizer } from '../../domain/access/authorizer.js';
import type { DeadLetters } from '../../domain/pubsub/dead-letters.js';
import type { LeasedDelivery } from '../../domain/pubsub/leased-delivery.js';
import { callerOf } from '../context.js';
import { methodNotAllowed } from '../documents.js';
import { CONTENT_LANGUAGE } from '../negotiation.js';
import { queryValues } from '../query-params.js';

export interface OutboxRouteDeps {
  access: Authorizer;
  /** The notification outbox being delivered. */
  delivery: LeasedDelivery;
  deadLetters: DeadLetters;
}

/** Operator routes of the notification outbox: queues, dead letters and their replay (JSON). */
export function outboxRoutes({ access, delivery, deadLetters }: OutboxRouteDeps): Router {
  const router = express.Router();
  const json = (res: express.Response, body: unknown) =>
    res.status(200).setHeader('Content-Language', CONTENT_LANGUAGE).json(body);

  router.get('/internal/outbox/queues', (_req, res) => {
    access.check(callerOf(res), { kind: 'operate', what: 'reading the notification outbox' });
    // Behind a balancer, each process shows the queues of the groups it delivers (`groups`, several processes).
    const { groups } = delivery;
    json(res, { queues: delivery.queueViews(), delivering: delivery.delivering, ...(groups && { groups }) });
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
