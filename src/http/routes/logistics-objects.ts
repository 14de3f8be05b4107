import type { ServerResponse } from 'node:http';
import express, { type Request, type Router } from 'express';
import { badQuery, notFound } from '../../errors.js';
import { api } from '../../rdf/vocab.js';
import { methodNotAllowed } from '../documents.js';
import type { ObjectView, RevisionSelector } from '../../domain/objects/logistics-objects.js';
import { bodyFormat, parseBody } from '../../rdf/parse.js';
import { readBody } from '../body.js';
import { callerOf, type Services } from '../context.js';
import { parseInstant, queryParam } from '../query-params.js';
import { negotiate, type Negotiated } from '../negotiation.js';
import type { Representations, RepresentationOptions } from '../representations.js';
import { sendCreated, sendRepresentation } from '../responses.js';

function readOptions(req: Request): { selector: RevisionSelector; options: RepresentationOptions } {
  const rawAt = queryParam(req, 'at');
  const rawRevision = queryParam(req, 'revision');
  const rawEmbedded = queryParam(req, 'embedded');
  if (rawEmbedded !== undefined && rawEmbedded !== 'true' && rawEmbedded !== 'false') throw badQuery('embedded', 'embedded must be true or false');
  if (rawRevision !== undefined && !/^[1-9][0-9]{0,8}$/.test(rawRevision)) throw badQuery('revision', 'revision must be a positive integer');
  if (rawAt !== undefined && rawRevision !== undefined) throw badQuery('at', 'give either at or revision, not both');
  const at = rawAt === undefined ? undefined : { raw: rawAt, instant: parseInstant(rawAt, 'at') };
  return {
    selector: { at: at?.instant, revision: rawRevision === undefined ? undefined : Number(rawRevision) },
    options: { at, embedded: rawEmbedded === 'true' },
  };
}

/** The route of one Logistics Object: also how logs and metrics name a GET the fast path answers. */
export const OBJECT_ROUTE = '/logistics-objects/:id';

/** 200 with a revision's body and the headers of a Logistics Object. */
export function sendObject(res: ServerResponse, negotiated: Negotiated, view: ObjectView, body: Buffer): void {
  sendRepresentation(res, negotiated, view.revision.createdAt, { Type: view.revision.mostSpecificType, Revision: String(view.revision.number), 'Latest-Revision': String(view.latest.number) }, body);
}

/**
 * POST /logistics-objects and GET/HEAD /logistics-objects/{id}; `representations` is shared with
 * the fast path of GET (object-get-fast-path.ts).
 */
export function logisticsObjectRoutes(services: Services, representations: Representations): Router {
  const router = express.Router();
  const { objects, config, access } = services;
  const rawBody = readBody(config.limits.bodyBytes);

  router.post('/logistics-objects', rawBody, async (req, res) => {
    const caller = callerOf(res);
    access.check(caller, { kind: 'create-object' });
    const format = bodyFormat(req.headers['content-type'], true);
    const quads = await parseBody(req.body as Buffer, format, { base: objects.objectsPrefix, limits: config.limits, jsonLd: services.jsonLd });
    const created = await objects.create(quads, caller);
    sendCreated(res, created.iri, created.type);
  });

  router.get(OBJECT_ROUTE, (req, res) => {
    const negotiated = negotiate(req.headers.accept);
    const { selector, options } = readOptions(req);
    const caller = callerOf(res);
    const iri = objects.objectsPrefix + req.params.id;
    const respond = (view: ObjectView) => {
      const send = (body: Buffer) => sendObject(res, negotiated, view, body);
      const body = representations.render(view, negotiated.format, caller, options);
      return Buffer.isBuffer(body) ? send(body) : body.then(send);
    };
    // The latest revision is in the index: answered without waiting for anything when its body is cached.
    if (selector.revision === undefined && selector.at === undefined) return respond(objects.readLatest(iri, caller));
    return objects.read(iri, caller, selector).then(respond);
  });

  router.patch(OBJECT_ROUTE, rawBody, async (req, res) => {
    const iri = objects.objectsPrefix + req.params.id;
    if (!objects.index.get(iri)) throw notFound(iri, 'Logistics Object not found');
    const format = bodyFormat(req.headers['content-type'], false);
    const quads = await parseBody(req.body as Buffer, format, { base: objects.objectsPrefix, limits: config.limits, jsonLd: services.jsonLd });
    const request = await services.changeRequests.submit(iri, quads, callerOf(res));
    sendCreated(res, request.iri, api.ChangeRequest);
  });

  router.all(OBJECT_ROUTE, methodNotAllowed('GET, HEAD, PATCH'));
  return router;
}
