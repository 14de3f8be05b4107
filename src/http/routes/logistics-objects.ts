import type { IncomingMessage, ServerResponse } from 'node:http';
import express, { type Request, type Router } from 'express';
import { badQuery } from '../../errors.js';
import { api } from '../../rdf/vocab.js';
import { methodNotAllowed } from '../documents.js';
import type { Authorizer } from '../../domain/access/authorizer.js';
import type { LogisticsObjects, ObjectView, RevisionSelector } from '../../domain/objects/logistics-objects.js';
import type { ChangeRequests } from '../../domain/requests/change-requests.js';
import { bodyFormat } from '../../rdf/parse.js';
import { type BodyRequest, readBody } from '../body.js';
import { bodyQuads, callerOf, type BodyReading } from '../context.js';
import { parseInstant, queryParam } from '../query-params.js';
import { negotiate, type Negotiated } from '../negotiation.js';
import type { Representations, RepresentationOptions } from '../representations.js';
import { contentTag, entityTag, notModified, type Validators } from '../conditional.js';
import { sendCreated, sendNotModified, sendRepresentation } from '../responses.js';

/** Which revision a GET reads, and in which form. */
export interface ObjectRead {
  selector: RevisionSelector;
  options: RepresentationOptions;
}

function readOptions(req: Request): ObjectRead {
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

/** The route of the Logistics Objects: also how logs and metrics name a POST the object fast path answers. */
export const OBJECTS_ROUTE = '/logistics-objects';
/** The route of one Logistics Object: also how logs and metrics name a GET or PATCH the object fast path answers. */
export const OBJECT_ROUTE = '/logistics-objects/:id';

/** What the routes of Logistics Objects use. */
export interface LogisticsObjectRouteDeps {
  objects: LogisticsObjects;
  access: Authorizer;
  changeRequests: ChangeRequests;
  bodyReading: BodyReading;
}

/**
 * POST /logistics-objects once its body is read (`readBody`): 201 with the new object's IRI and type
 * (ONE Record API, "POST /logistics-objects").
 */
async function createObject(deps: LogisticsObjectRouteDeps, req: BodyRequest, res: ServerResponse): Promise<void> {
  const { objects, access, bodyReading } = deps;
  const caller = callerOf(res);
  access.check(caller, { kind: 'create-object' });
  const format = bodyFormat(req.headers['content-type'], true);
  const quads = await bodyQuads(bodyReading, req, res, format);
  const created = await objects.create(quads, caller);
  sendCreated(res, created.iri, created.type);
}

/**
 * PATCH /logistics-objects/{id} once its body is read (`readBody`): 201 with the ChangeRequest's IRI
 * (ONE Record API, "PATCH /logistics-objects/<logistics_object_id>").
 */
async function changeObject(
  deps: LogisticsObjectRouteDeps,
  id: string,
  req: BodyRequest,
  res: ServerResponse,
): Promise<void> {
  const { objects, changeRequests, bodyReading } = deps;
  const entry = await objects.existing(objects.objectsPrefix + id);
  const format = bodyFormat(req.headers['content-type'], false);
  const quads = await bodyQuads(bodyReading, req, res, format);
  const request = await changeRequests.submit(entry, quads, callerOf(res));
  sendCreated(res, request.iri, api.ChangeRequest);
}

/**
 * The validators of a revision's plain form (no `at`, no embedding), known without its body: that
 * body follows from the revision, the latest revision's number (which it shows) and the media
 * type; the tag names the revision's creation too, so a store built anew under the same IRIs
 * cannot repeat a tag. The body last changed when the latest revision was made.
 */
function objectValidators(view: ObjectView, negotiated: Negotiated): Validators {
  const { revision, latest } = view;
  const created = revision.createdAt.getTime().toString(36);
  const etag = entityTag(revision.number, latest.number, created, negotiated.format, negotiated.version);
  return { etag, lastModified: latest.createdAt };
}

/** 200 with a revision's body and the headers of a Logistics Object. */
function sendObject(res: ServerResponse, negotiated: Negotiated, view: ObjectView, etag: string, body: Buffer): void {
  const { revision, latest } = view;
  const headers = {
    ETag: etag,
    Type: revision.mostSpecificType,
    Revision: String(revision.number),
    'Latest-Revision': String(latest.number),
  };
  sendRepresentation(res, negotiated, revision.createdAt, headers, body);
}

/** The latest revision in its plain form: what a GET without a query reads. */
const LATEST_REVISION: ObjectRead = { selector: {}, options: { embedded: false } };

/**
 * GET and HEAD of a Logistics Object (ONE Record API, "GET /logistics-objects/<logistics_object_id>"):
 * the revision and form `read` names, or 304 when the client's copy is current.
 */
function readObject(
  objects: LogisticsObjects,
  representations: Representations,
  req: IncomingMessage,
  res: ServerResponse,
  id: string,
  negotiated: Negotiated,
  { selector, options }: ObjectRead,
): void | Promise<void> {
  const caller = callerOf(res);
  const iri = objects.objectsPrefix + id;
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
  if (selector.revision === undefined && selector.at === undefined) {
    const latest = objects.readLatest(iri, caller);
    return 'then' in latest ? latest.then(respond) : respond(latest);
  }
  return objects.read(iri, caller, selector).then(respond);
}

/**
 * The handlers of the requests most clients send, over Node's request and response: the express
 * routes below call them, and so does the object fast path (object-fast-path.ts) for requests
 * without a query.
 */
export interface ObjectHandlers {
  /** GET or HEAD of an object's latest revision in its plain form. */
  readLatest(req: IncomingMessage, res: ServerResponse, id: string): void | Promise<void>;
  /** POST /logistics-objects, its body read first. */
  create(req: IncomingMessage, res: ServerResponse): Promise<void>;
  /** PATCH of an object, its body read first. */
  change(req: IncomingMessage, res: ServerResponse, id: string): Promise<void>;
}

export function objectHandlers(deps: LogisticsObjectRouteDeps, representations: Representations): ObjectHandlers {
  const rawBody = readBody(deps.bodyReading.limits.bodyBytes);
  const bodyRead = (req: IncomingMessage, res: ServerResponse) =>
    new Promise<void>((resolve, reject) => rawBody(req, res, (err) => (err === undefined ? resolve() : reject(err))));
  return {
    readLatest: (req, res, id) =>
      readObject(deps.objects, representations, req, res, id, negotiate(req.headers.accept), LATEST_REVISION),
    create: (req, res) => bodyRead(req, res).then(() => createObject(deps, req, res)),
    change: (req, res, id) => bodyRead(req, res).then(() => changeObject(deps, id, req, res)),
  };
}

/**
 * POST /logistics-objects and GET/HEAD/PATCH /logistics-objects/{id}; `representations` is shared
 * with the object fast path (object-fast-path.ts), which answers the requests without a query before express.
 */
export function logisticsObjectRoutes(deps: LogisticsObjectRouteDeps, representations: Representations): Router {
  const router = express.Router();
  const handlers = objectHandlers(deps, representations);

  router.post(OBJECTS_ROUTE, (req, res) => handlers.create(req, res));

  router.get(OBJECT_ROUTE, (req, res) => {
    const negotiated = negotiate(req.headers.accept);
    return readObject(deps.objects, representations, req, res, req.params.id as string, negotiated, readOptions(req));
  });

  router.patch(OBJECT_ROUTE, (req, res) => handlers.change(req, res, req.params.id as string));

  router.all(OBJECT_ROUTE, methodNotAllowed('GET, HEAD, PATCH'));
  return router;
}
