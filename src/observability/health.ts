import { Router } from 'express';
import type { StoreCapacity } from '../store/capacity.js';

/** Where the server is in its life: only `ready` takes traffic. */
export type Phase = 'starting' | 'ready' | 'stopping';

/** A pause in the requests shorter than this still counts as serving. */
const SERVING_PAUSE_MS = 10;

/** The server's phase, set by startServer and read by the health routes. */
export class Lifecycle {
  phase: Phase = 'starting';
  /** API requests received and not yet answered (notification delivery gives way to them). */
  requestsInFlight = 0;
  /** When the last one was answered (`performance.now()`). */
  lastAnsweredAt = -Infinity;

  /** Requests are being answered, or were a moment ago (a client's next request is usually on its way). */
  serving(): boolean {
    return this.requestsInFlight > 0 || performance.now() - this.lastAnsweredAt < SERVING_PAUSE_MS;
  }

  /** How full the store is, once it is open. */
  storeCapacity?: () => StoreCapacity;
}

/**
 * `GET /health/live` (the process answers) and `GET /health/ready` (200 once the store is loaded,
 * 503 while starting or shutting down; with the store's capacity and headroom once it is open),
 * plain JSON, without authentication: orchestrators probe them without credentials.
 */
export function healthRoutes(lifecycle: Lifecycle): Router {
  const router = Router();
  router.get('/health/live', (_req, res) => {
    res.setHeader('Cache-Control', 'no-store').json({ status: 'live' });
  });
  router.get('/health/ready', (_req, res) => {
    res
      .status(lifecycle.phase === 'ready' ? 200 : 503)
      .setHeader('Cache-Control', 'no-store')
      .json({ status: lifecycle.phase, ...(lifecycle.storeCapacity && { store: lifecycle.storeCapacity() }) });
  });
  return router;
}
