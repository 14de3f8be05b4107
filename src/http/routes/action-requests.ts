import express, { type Request, type Router } from 'express';
import { lastModified, type ActionRequestRecord } from '../../domain/requests/action-request-index.js';
import { badQuery } from '../../errors.js';
import { api } from '../../rdf/vocab.js';
import type { ActionRequests } from '../../domain/requests/action-requests.js';
import { callerOf, requestUrl } from '../context.js';
import { parseRequestStatus, parseRequestType, queryParam } from '../query-params.js';
import { collectionTriples, methodNotAllowed, serialise } from '../documents.js';
import { CONTENT_LANGUAGE, negotiate, type Negotiated } from '../negotiation.js';
import { entityTag, notModified, type Validators } from '../conditional.js';
import { sendNotModified, setRepresentationHeaders } from '../responses.js';

/**
 * A request's graph is only ever added to, each time with a new status entry, and shows the same
 * to everyone who may read it: its status entries and the last one's time identify its body.
 */
function requestValidators(record: ActionRequestRecord, negotiated: Negotiated): Validators & { lastModified: Date } {
  const since = lastModified(record);
  const etag = entityTag(record.statuses.length, since.getTime().toString(36), negotiated.format, negotiated.version);
  return { etag, lastModified: since };
}

export interface ActionRequestRouteDeps {
  actionRequests: ActionRequests;
  baseUrl: string;
}

/** GET /action-requests (internal), and GET/HEAD, PATCH (decide) and DELETE (revoke) of one request. */
export function actionRequestRoutes({ actionRequests, baseUrl }: ActionRequestRouteDeps): Router {
  const router = express.Router();
  const iriOf = (req: Request) => actionRequests.prefix + (req.params.id as string);

  router.get('/action-requests', async (req, res) => {
    const negotiated = negotiate(req.headers.accept);
    const status = queryParam(req, 'status');
    const type = queryParam(req, 'type');
    const records = await actionRequests.list(callerOf(res), {
      status: status === undefined ? undefined : parseRequestStatus(status, 'status'),
      type: type === undefined ? undefined : parseRequestType(type, 'type'),
      object: queryParam(req, 'logistics-object'),
    });
    const url = requestUrl(baseUrl, req);
    const triples = collectionTriples(
      url,
      records.length,
      records.map((r) => r.iri),
    );
    for (const representation of await Promise.all(records.map((r) => actionRequests.representation(r))))
      triples.push(...representation);
    const body = await serialise({ iri: url, triples }, negotiated.format);
    setRepresentationHeaders(res, negotiated).setHeader('Type', api.Collection);
    res.send(body);
  });

  router.get('/action-requests/:id', async (req, res) => {
    const negotiated = negotiate(req.headers.accept);
    const record = await actionRequests.readable(iriOf(req), callerOf(res));
    const validators = requestValidators(record, negotiated);
    if (notModified(req.headers, validators)) return sendNotModified(res, validators.etag);
    const body = await serialise(
      { iri: record.iri, triples: await actionRequests.representation(record) },
      negotiated.format,
    );
    setRepresentationHeaders(res, negotiated, validators.lastModified).setHeader('Type', record.type);
    res.setHeader('ETag', validators.etag);
    res.send(body);
  });

  router.patch('/action-requests/:id', async (req, res) => {
    const status = queryParam(req, 'status');
    if (status === undefined) throw badQuery('status', 'status is required: REQUEST_ACCEPTED or REQUEST_REJECTED');
    const record = await actionRequests.decide(iriOf(req), parseRequestStatus(status, 'status'), callerOf(res));
    res
      .status(204)
      .setHeader('Location', record.iri)
      .setHeader('Type', record.type)
      .setHeader('Content-Language', CONTENT_LANGUAGE)
      .end();
  });

  router.delete('/action-requests/:id', async (req, res) => {
    await actionRequests.revoke(iriOf(req), callerOf(res));
    res.status(204).setHeader('Content-Language', CONTENT_LANGUAGE).end();
  });

  router.all('/action-requests', methodNotAllowed('GET, HEAD'));
  router.all('/action-requests/:id', methodNotAllowed('GET, HEAD, PATCH, DELETE'));
  return router;
}
