import express, {
  type ErrorRequestHandler,
  type Request,
  type RequestHandler,
  type Response,
  type Router,
} from 'express';
import { badRequest } from '../../errors.js';
import { bodyFormat } from '../../rdf/parse.js';
import { API, api, apiLocalName } from '../../rdf/vocab.js';
import type { NotificationFilter } from '../../store/graph-store.js';
import { readBody } from '../body.js';
import type { ReceivedNotifications } from '../../domain/pubsub/received-notifications.js';
import { bodyQuads, callerOf, requestUrl, type BodyReading } from '../context.js';
import { collectionTriples, methodNotAllowed, serialise } from '../documents.js';
import { CONTENT_LANGUAGE, negotiate } from '../negotiation.js';
import { queryCount, queryInstant, queryParam } from '../query-params.js';
import { setRepresentationHeaders } from '../responses.js';

/** Longest Idempotency-Key kept (the notification ids this server sends are URLs well below it). */
const MAX_IDEMPOTENCY_KEY = 512;

/** The received notifications a listing asks for: its filters and its page. */
function listingQuery(req: Request): { filter: NotificationFilter; skip: number; limit: number } {
  const eventType = queryParam(req, 'event-type');
  const filter = {
    sender: queryParam(req, 'sender'),
    eventType: eventType === undefined ? undefined : `${API}${apiLocalName(eventType)}`,
    object: queryParam(req, 'logistics-object'),
    receivedAfter: queryInstant(req, ['received-after']),
    receivedBefore: queryInstant(req, ['received-before']),
  };
  return { filter, skip: queryCount(req, 'skip', 0), limit: queryCount(req, 'limit', 100, 1000) };
}

export interface NotificationRouteDeps {
  receivedNotifications: ReceivedNotifications;
  bodyReading: BodyReading;
  baseUrl: string;
}

/**
 * POST /notifications (any authenticated caller: ONE Record API, "POST /notifications"); for
 * operators, GET /internal/notifications (the notifications as received) and
 * GET /internal/notifications/receipts (what this server noted on their arrival, as JSON:
 * docs/received-notifications.md).
 */
export function notificationRoutes({ receivedNotifications, bodyReading, baseUrl }: NotificationRouteDeps): Router {
  const router = express.Router();

  // A refused notification closes its connection, so a publisher that pipelines a queue's
  // notifications gets nothing behind it handled before it sends it again (the listener handles
  // nothing behind an answer that closes the connection): they are stored in queue order.
  const closeOnRefusal: ErrorRequestHandler = (err, _req, res, next) => {
    res.setHeader('Connection', 'close');
    next(err);
  };
  const store: RequestHandler = async (req, res) => {
    const format = bodyFormat(req.headers['content-type'], false);
    const key = req.headers['idempotency-key'];
    if (typeof key === 'string' && (key.length === 0 || key.length > MAX_IDEMPOTENCY_KEY)) {
      throw badRequest(
        'invalid_idempotency_key',
        `the Idempotency-Key header must have 1 to ${MAX_IDEMPOTENCY_KEY} characters`,
        'Idempotency-Key',
      );
    }
    const quads = await bodyQuads(bodyReading, req, res, format, `${baseUrl}/notifications/`);
    await receivedNotifications.receive(quads, callerOf(res), typeof key === 'string' ? key : undefined);
    res.status(204).setHeader('Content-Language', CONTENT_LANGUAGE).end();
  };
  router.post('/notifications', readBody(bodyReading.limits.bodyBytes), store, closeOnRefusal);
  router.all('/notifications', methodNotAllowed('POST'));

  const list = (req: Request, res: Response) => {
    const { filter, skip, limit } = listingQuery(req);
    return receivedNotifications.list(callerOf(res), filter, skip, limit);
  };
  router.get('/internal/notifications', async (req, res) => {
    const negotiated = negotiate(req.headers.accept);
    const { total, page } = await list(req, res);
    const url = requestUrl(baseUrl, req);
    const triples = collectionTriples(
      url,
      total,
      page.map((r) => r.iri),
    );
    for (const received of await Promise.all(page.map((r) => receivedNotifications.triples(r))))
      triples.push(...received);
    const body = await serialise({ iri: url, triples }, negotiated.format);
    setRepresentationHeaders(res, negotiated).setHeader('Type', api.Collection);
    res.send(body);
  });
  router.all('/internal/notifications', methodNotAllowed('GET, HEAD'));

  // The receipt is the receiver's, not part of the notification as sent: the listing above serves
  // the notifications as received, so it is answered here, in the same order and pages.
  router.get('/internal/notifications/receipts', async (req, res) => {
    const { total, page } = await list(req, res);
    res.setHeader('Content-Language', CONTENT_LANGUAGE).json({
      total,
      receipts: page.map((r) => ({
        notification: r.iri,
        sequence: r.sequence,
        sender: r.sender,
        receivedAt: r.receivedAt.toISOString(),
        eventType: r.eventType,
        ...(r.object === undefined ? {} : { object: r.object }),
        ...(r.idempotencyKey === undefined ? {} : { idempotencyKey: r.idempotencyKey }),
      })),
    });
  });
  router.all('/internal/notifications/receipts', methodNotAllowed('GET, HEAD'));
  return router;
}
