import express, { type Request, type Router } from 'express';
import { eventsPrefixOf } from '../../domain/events/event-body.js';
import { EVENT_SORTS, type EventQuery, type EventSort } from '../../domain/events/event-index.js';
import { EVENT_PAGE_SIZE, type CreationOutcome, type LogisticsEvents } from '../../domain/events/logistics-events.js';
import { badQuery } from '../../errors.js';
import { compactIri, withContext, type JsonObject } from '../../rdf/jsonld-writer.js';
import { bodyFormat } from '../../rdf/parse.js';
import { api, cargo } from '../../rdf/vocab.js';
import { readBody } from '../body.js';
import { bodyQuads, callerOf, requestUrl, type BodyReading } from '../context.js';
import { methodNotAllowed, serialise } from '../documents.js';
import { errorDocument } from '../error-responses.js';
import { EventRepresentations } from '../event-representations.js';
import { negotiate } from '../negotiation.js';
import { contentTag, notModified } from '../conditional.js';
import { queryCount, queryInstant, queryValues, singleQueryValue } from '../query-params.js';
import { sendCreated, sendNotModified, setRepresentationHeaders } from '../responses.js';

/**
 * The filters, order and page of a list request (docs/behaviour.md, "Audit trail and Logistics
 * Events"); 400 naming the parameter at fault.
 */
export function readEventQuery(req: Request): EventQuery {
  const codeParam = queryValues(req, ['eventType', 'event-code']);
  const codes = codeParam?.values
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter((v) => v !== '');
  if (codeParam && codes!.length === 0)
    throw badQuery(codeParam.name, `${codeParam.name} must name at least one event code`);
  const sort = singleQueryValue(req, ['sort']);
  if (sort && !(EVENT_SORTS as string[]).includes(sort.value))
    throw badQuery('sort', `sort must be one of ${EVENT_SORTS.join(', ')}`);
  return {
    codes,
    createdAfter: queryInstant(req, ['created-after', 'created_after']),
    createdBefore: queryInstant(req, ['created-before', 'created_before']),
    occurredAfter: queryInstant(req, ['occurred-after', 'occurred_after']),
    occurredBefore: queryInstant(req, ['occurred-before', 'occurred_before']),
    sort: sort?.value as EventSort | undefined,
    limit: queryCount(req, 'limit', EVENT_PAGE_SIZE.default, EVENT_PAGE_SIZE.max),
    skip: queryCount(req, 'skip', 0),
  };
}

function multiStatusDocument(outcomes: CreationOutcome[]): JsonObject {
  const results = outcomes.map((o): JsonObject => {
    const result: JsonObject = {
      '@type': compactIri(api.EventCreationResult),
      [compactIri(api.hasHTTPStatus)]: o.event ? 201 : o.error.status,
      [compactIri(api.hasLogisticsObject)]: { '@id': o.object },
    };
    if (o.event) result[compactIri(api.hasLogisticsEvent)] = { '@id': o.event.iri };
    else result[compactIri(api.hasError)] = errorDocument(o.error);
    return result;
  });
  const created = outcomes.filter((o) => o.event).length;
  return {
    '@type': compactIri(api.MultiStatusResponse),
    [compactIri(api.hasTotalItems)]: outcomes.length,
    [compactIri(api.hasTotalCreated)]: created,
    [compactIri(api.hasTotalFailed)]: outcomes.length - created,
    [compactIri(api.hasCreationResult)]: results.length === 1 ? results[0] : results,
  };
}

export interface LogisticsEventRouteDeps {
  events: LogisticsEvents;
  objectsPrefix: string;
  bodyReading: BodyReading;
  baseUrl: string;
}

/** Logistics Events: create, read and list per object, and the bulk intake POST /logistics-events. */
export function logisticsEventRoutes({ events, objectsPrefix, bodyReading, baseUrl }: LogisticsEventRouteDeps): Router {
  const router = express.Router();
  const rawBody = readBody(bodyReading.limits.bodyBytes);
  const representations = new EventRepresentations(events);
  const list = '/logistics-objects/:id/logistics-events';
  const objectOf = (req: Request) => objectsPrefix + (req.params.id as string);

  router.post(list, rawBody, async (req, res) => {
    const caller = callerOf(res);
    const format = bodyFormat(req.headers['content-type'], true);
    const entry = await events.postTarget(objectOf(req), caller);
    const quads = await bodyQuads(bodyReading, req, res, format, eventsPrefixOf(entry.iri));
    const created = await events.create(entry, quads, caller);
    sendCreated(res, created.iri, cargo.LogisticsEvent);
  });

  router.get(list, async (req, res) => {
    const negotiated = negotiate(req.headers.accept);
    const query = readEventQuery(req);
    const page = await events.list(objectOf(req), callerOf(res), query);
    const url = requestUrl(baseUrl, req);
    // The body follows from the Collection's @id, the count of matches and the page's events
    // (immutable), as the caller is shown them: those name it, with no store read.
    const shown = [url, page.total, ...page.events.map((e) => e.iri)].join('\n');
    const etag = contentTag(shown, negotiated.format, negotiated.version);
    if (notModified(req.headers, { etag })) return sendNotModified(res, etag);
    const body = await representations.collection(url, page, negotiated.format);
    setRepresentationHeaders(res, negotiated).setHeader('Type', api.Collection).setHeader('ETag', etag);
    res.send(body);
  });

  router.get(`${list}/:eventId`, async (req, res) => {
    const negotiated = negotiate(req.headers.accept);
    const view = await events.read(objectOf(req), req.params.eventId as string, callerOf(res));
    const body = await serialise({ iri: view.record.iri, triples: view.triples }, negotiated.format);
    setRepresentationHeaders(res, negotiated, view.record.recordedAt).setHeader('Type', view.type);
    res.send(body);
  });

  router.post('/logistics-events', rawBody, async (req, res) => {
    const negotiated = negotiate(req.headers.accept, ['jsonld']);
    const format = bodyFormat(req.headers['content-type'], true);
    const quads = await bodyQuads(bodyReading, req, res, format);
    const outcomes = await events.createMany(quads, callerOf(res));
    setRepresentationHeaders(res, negotiated).status(207);
    res.send(Buffer.from(withContext(multiStatusDocument(outcomes))));
  });

  // Events are immutable: no route changes or deletes them (ONE Record API, "What the service does", 4).
  router.all(`${list}/:eventId`, methodNotAllowed('GET, HEAD'));
  router.all(list, methodNotAllowed('GET, HEAD, POST'));
  router.all('/logistics-events', methodNotAllowed('POST'));
  return router;
}
