import { createHash, timingSafeEqual } from 'node:crypto';
import { Router } from 'express';
import { HttpError } from '../errors.js';
import type { ServerMetrics } from './metrics.js';

const digest = (text: string) => createHash('sha256').update(text).digest();

/**
 * `GET /metrics` in Prometheus text format. With a `token`, only requests bearing it are
 * answered (others: 401); without one, the route is only mounted on the separate metrics
 * listener, protected by the address it binds to. Kept apart from metrics.ts so that prom-client
 * is only loaded when metrics are on.
 */
export function metricsRoute(metrics: ServerMetrics, token?: string): Router {
  const router = Router();
  const expected = token === undefined ? undefined : digest(`Bearer ${token}`);
  router.get('/metrics', async (req, res, next) => {
    if (expected && !timingSafeEqual(digest(req.headers.authorization ?? ''), expected)) {
      next(
        new HttpError(401, 'metrics_token_required', {
          message: 'GET /metrics needs Authorization: Bearer <metrics.token>',
        }),
      );
      return;
    }
    res
      .setHeader('Content-Type', metrics.registry.contentType)
      .setHeader('Cache-Control', 'no-store')
      .send(await metrics.registry.metrics());
  });
  return router;
}
