import express, { type Request, type Router } from 'express';
import { HttpError, badQuery, badRequest } from '../../errors.js';
import { readBody } from '../body.js';
import { writeJsonLd } from '../../rdf/jsonld-writer.js';
import { wantedSubscription } from '../../domain/pubsub/subscription-offers.js';
import type { RemoteSubscriptionInput, RemoteSubscriptions } from '../../domain/pubsub/remote-subscriptions.js';
import type { Subscriptions } from '../../domain/pubsub/subscriptions.js';
import type { CargoOntology } from '../../rdf/ontology.js';
import { checkTopic, parseTopicType } from '../../domain/pubsub/topics.js';
import { bodyQuads, callerOf, type BodyReading } from '../context.js';
import { bodyFormat } from '../../rdf/parse.js';
import { api } from '../../rdf/vocab.js';
import { CONTENT_LANGUAGE, negotiate } from '../negotiation.js';
import { queryParam } from '../query-params.js';
import { sendCreated, setRepresentationHeaders } from '../responses.js';
import { methodNotAllowed } from '../documents.js';

/** The JSON body of POST /internal/remote-subscriptions (its fields are checked by RemoteSubscriptions). */
function readRemoteSubscription(req: Request): RemoteSubscriptionInput {
  if (!req.is('application/json'))
    throw new HttpError(415, 'unsupported_content_type', { message: 'send the subscription as application/json' });
  let body: unknown;
  try {
    body = JSON.parse((req.body as Buffer).toString('utf8'));
  } catch {
    throw badRequest('invalid_remote_subscription', 'the body is not JSON');
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw badRequest('invalid_remote_subscription', 'the body must be a JSON object');
  return body as RemoteSubscriptionInput;
}

export interface SubscriptionRouteDeps {
  subscriptions: Subscriptions;
  /** Subscriptions this server holds at other servers. */
  remoteSubscriptions: RemoteSubscriptions;
  /** Topics are checked against it. */
  ontology: CargoOntology;
  /** The data holder's IRI: the subscriber this server names. */
  holder: string;
  bodyReading: BodyReading;
  baseUrl: string;
}

/**
 * GET /subscriptions: what this server, as subscriber, wants for a topic; POST /subscriptions: a
 * subscriber asks this server, as publisher (ONE Record API, "GET /subscriptions", "POST /subscriptions").
 */
export function subscriptionRoutes(deps: SubscriptionRouteDeps): Router {
  const { subscriptions, remoteSubscriptions, ontology, holder, bodyReading, baseUrl } = deps;
  const router = express.Router();

  router.get('/subscriptions', (req, res) => {
    const negotiated = negotiate(req.headers.accept, ['jsonld']);
    // A '#' sent raw reaches the server only from clients that do not strip fragments.
    if (req.originalUrl.includes('#')) throw badQuery('topic', "the query holds an unencoded '#': send it as %23");
    const topicType = queryParam(req, 'topicType');
    const topic = queryParam(req, 'topic');
    const type = topicType === undefined ? undefined : parseTopicType(topicType, 'topicType');
    if (topic === undefined) throw badQuery('topic', 'The required query parameter `topic` is missing.');
    if (type === undefined) throw badQuery('topicType', 'The required query parameter `topicType` is missing.');
    const wanted = wantedSubscription(holder, checkTopic(type, topic, ontology, 'topic'));
    setRepresentationHeaders(res, negotiated);
    res.send(Buffer.from(writeJsonLd(wanted)));
  });
  router.post('/subscriptions', readBody(bodyReading.limits.bodyBytes), async (req, res) => {
    const format = bodyFormat(req.headers['content-type'], true);
    const quads = await bodyQuads(bodyReading, req, res, format, `${baseUrl}/subscriptions/`);
    const record = await subscriptions.submit(quads, callerOf(res));
    sendCreated(res, record.iri, api.SubscriptionRequest);
  });
  router.all('/subscriptions', methodNotAllowed('GET, HEAD, POST'));

  // Operators: subscribe this server to a topic at another server, and list what it subscribed to.
  router.post('/internal/remote-subscriptions', readBody(64 * 1024), async (req, res) => {
    const record = await remoteSubscriptions.subscribe(readRemoteSubscription(req), callerOf(res));
    res.status(201).setHeader('Location', record.request).setHeader('Content-Language', CONTENT_LANGUAGE).json(record);
  });
  router.get('/internal/remote-subscriptions', (_req, res) => {
    res
      .setHeader('Content-Language', CONTENT_LANGUAGE)
      .json({ subscriptions: remoteSubscriptions.list(callerOf(res)) });
  });
  router.all('/internal/remote-subscriptions', methodNotAllowed('GET, HEAD, POST'));
  return router;
}
