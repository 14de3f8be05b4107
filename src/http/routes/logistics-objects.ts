import type { ServerResponse } from 'node:http';
import express, { type Request, type Response, type Router } from 'express';
import { badQuery, notFound } from '../../errors.js';
import { api } from '../../rdf/vocab.js';
import { methodNotAllowed } from '../documents.js';
import type { ObjectView, RevisionSelector } from '../../domain/objects/logistics-objects.js';
import { bodyFormat } from '../../rdf/parse.js';
import { readBody } from '../body.js';
import { bodyQuads, callerOf, type Services } from '../context.js';
import { parseInstant, queryParam } from '../query-params.js';
import { negotiate, type Negotiated } from '../negotiation.js';
import type { Representations, RepresentationOptions } from '../representations.js';
import { contentTag, entityTag, notModified, type Validators } from '../conditional.js';
import { sendCreated, sendNotModified, sendRepresentation } from '../responses.js';

function readOptions(req: Request): { selector: RevisionSelector; options: RepresentationOptions } {
  const rawAt = queryParam(req, 'at');
  const rawRevision = queryParam(req, 'revision');
  const rawEmbedded = queryParam(req, 'embedded');
  if (rawEmbedded !== undefined && rawEmbedded !== 'true' && rawEmbedded !== 'false')
    throw badQuery('embedded', 'embedded must be true or false');
  if (rawRevision !== undefined && !/^[1-9][0-9]{0,8}$/.test(rawRevision))
    throw badQuery('revision', 'revision must be a positive integer');
  if (rawAt !== undefined && rawRevision !== undefined) throw badQuery('at', 'give either at or revision, not both');
  const at = rawAt === undefined ? undefined : { raw: rawAt, instant: parseInstant(rawAt, 'at') };
  return {
    selector: { at: at?.instant, revision: rawRevision === undefined ? undefined : Number(rawRevision) },
    options: { at, embedded: rawEmbedded === 'true' },
  };
}

/** The route of the Logistics Objects: also how logs and metrics name a POST the fast path answers. */
export const OBJECTS_ROUTE = '/logistics-objects';
/** The route of one Logistics Object: also how logs and metrics name a GET or PATCH the fast path answers. */
export const OBJECT_ROUTE = '/logistics-objects/:id';

/** POST /logistics-objects once its body is read (`readBody`): 201 with the new object's IRI and type (ONE Record API, "POST /logistics-objects"). */
export async function createObject(services: Services, req: Request, res: Response): Promise<void> {
  const { objects } = services;
  const caller = callerOf(res);
  services.access.check(caller, { kind: 'create-object' });
  const format = bodyFormat(req.headers['content-type'], true);
  const quads = await bodyQuads(services, req, format);
  const created = await objects.create(quads, caller);
  sendCreated(res, created.iri, created.type);
}

/** PATCH /logistics-objects/{id} once its body is read (`readBody`): 201 with the ChangeRequest's IRI (ONE Record API, "PATCH /logistics-objects/<logistics_object_id>"). */
export async function changeObject(services: Services, id: string, req: Request, res: Response): Promise<void> {
  const { objects } = services;
  const iri = objects.objectsPrefix + id;
  if (!objects.index.get(iri)) throw notFound(iri, 'Logistics Object not found');
  const format = bodyFormat(req.headers['content-type'], false);
  const quads = await bodyQuads(services, req, format);
  const request = await services.changeRequests.submit(iri, quads, callerOf(res));
  sendCreated(res, request.iri, api.ChangeRequest);
}

/**
 * The validators of a revision's plain form (no `at`, no embedding), known without its body: that
 * body follows from the revision, the latest revision's number (which it shows) and the media
 * type; the tag names the revision's creation too, so a store built anew under the same IRIs
 * cannot repeat a tag. The body last changed when the latest revision was made.
 */
export function objectValidators(view: ObjectView, negotiated: Negotiated): Validators {
  const { revision, latest } = view;
  const created = revision.createdAt.getTime().toString(36);
  const etag = entityTag(revision.number, latest.number, created, negotiated.format, negotiated.version);
  return { etag, lastModified: latest.createdAt };
}

/** 200 with a revision's body and the headers of a Logistics Object. */
export function sendObject(
  res: ServerResponse,
  negotiated: Negotiated,
  view: ObjectView,
  etag: string,
  body: Buffer,
): void {
  const { revision, latest } = view;
  const headers = {
    ETag: etag,
    Type: revision.mostSpecificType,
    Revision: String(revision.number),
    'Latest-Revision': String(latest.number),
  };
  sendRepresentation(res, negotiated, revision.createdAt, headers, body);
}

/**
 * POST /logistics-objects and GET/HEAD/PATCH /logistics-objects/{id}; `representations` is shared
 * with the fast path (object-fast-path.ts), which answers most of these requests before express.
 */
export function logisticsObjectRoutes(services: Services, representations: Representations): Router {
  const router = express.Router();
  const { objects, config } = services;
  const rawBody = readBody(config.limits.bodyBytes);

  router.post(OBJECTS_ROUTE, rawBody, (req, res) => createObject(services, req, res));

  router.get(OBJECT_ROUTE, (req, res) => {
    const negotiated = negotiate(req.headers.accept);
    const { selector, options } = readOptions(req);
    const caller = callerOf(res);
    const iri = objects.objectsPrefix + req.params.id;
    const plain = !options.at && !options.embedded;
    const respond = (view: ObjectView) => {
      const known = plain ? objectValidators(view, negotiated) : undefined;
      if (known && notModified(req.headers, known)) return sendNotModified(res, known.etag);
      const send = (body: Buffer) => {
        // `at` and embedded forms show more than the revision (linked objects, links that exist now):
        // their tag is their bytes', and If-Modified-Since does not apply to them.
        const validators = known ?? { etag: contentTag(body, negotiated.version) };
        if (!known && notModified(req.headers, validators)) sendNotModified(res, validators.etag);
        else sendObject(res, negotiated, view, validators.etag, body);
      };
      const body = representations.render(view, negotiated.format, caller, options);
      return Buffer.isBuffer(body) ? send(body) : body.then(send);
    };
    // The latest revision is in the index: answered without waiting for anything when its body is cached.
    if (selector.revision === undefined && selector.at === undefined) return respond(objects.readLatest(iri, caller));
    return objects.read(iri, caller, selector).then(respond);
  });

  router.patch(OBJECT_ROUTE, rawBody, (req, res) => changeObject(services, req.params.id as string, req, res));

  router.all(OBJECT_ROUTE, methodNotAllowed('GET, HEAD, PATCH'));
  return router;
}
