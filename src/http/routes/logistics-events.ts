import express, { type Request, type Router } from 'express';
import { eventsPrefixOf } from '../../domain/event-body.js';
import { EVENT_SORTS, type EventQuery, type EventSort } from '../../domain/event-index.js';
import { EVENT_PAGE_SIZE, type CreationOutcome } from '../../domain/logistics-events.js';
import { parseInstant } from '../../domain/logistics-objects.js';
import { badQuery } from '../../errors.js';
import { compactIri, withContext, type JsonObject } from '../../rdf/jsonld-writer.js';
import { bodyFormat, parseBody } from '../../rdf/parse.js';
import { api, cargo } from '../../rdf/vocab.js';
import { readBody } from '../body.js';
import { callerOf, requestUrl, type Services } from '../context.js';
import { methodNotAllowed, serialise } from '../documents.js';
import { errorDocument } from '../error-responses.js';
import { EventRepresentations } from '../event-representations.js';
import { negotiate } from '../negotiation.js';
import { sendCreated, setRepresentationHeaders } from '../responses.js';

/** The values of a query parameter that has several accepted spellings; giving two of them is an error. */
function param(req: Request, names: readonly string[]): { name: string; values: string[] } | undefined {
  const query = req.query as Record<string, unknown>;
  const given = names.filter((n) => query[n] !== undefined);
  if (given.length > 1) throw badQuery(given[1], `give ${given.join(' or ')}, not both`);
  if (given.length === 0) return undefined;
  const raw = query[given[0]];
  return { name: given[0], values: (Array.isArray(raw) ? raw : [raw]).filter((v): v is string => typeof v === 'string') };
}

function single(req: Request, names: readonly string[]): { name: string; value: string } | undefined {
  const p = param(req, names);
  if (p && p.values.length !== 1) throw badQuery(p.name, `${p.name} may be given once`);
  return p && { name: p.name, value: p.values[0] };
}

function count(req: Request, name: string, fallback: number, max = 1e9): number {
  const p = single(req, [name]);
  if (!p) return fallback;
  if (!/^\d{1,10}$/.test(p.value) || Number(p.value) > max) throw badQuery(name, `${name} must be an integer from 0 to ${max}`);
  return Number(p.value);
}

function instant(req: Request, names: readonly string[]): Date | undefined {
  const p = single(req, names);
  return p && parseInstant(p.value, p.name);
}

/** The filters, order and page of a list request (DECISIONS "Logistics Events"); 400 naming the parameter at fault. */
export function readEventQuery(req: Request): EventQuery {
  const codeParam = param(req, ['eventType', 'event-code']);
  const codes = codeParam?.values.flatMap((v) => v.split(',')).map((v) => v.trim()).filter((v) => v !== '');
  if (codeParam && codes!.length === 0) throw badQuery(codeParam.name, `${codeParam.name} must name at least one event code`);
  const sort = single(req, ['sort']);
  if (sort && !(EVENT_SORTS as string[]).includes(sort.value)) throw badQuery('sort', `sort must be one of ${EVENT_SORTS.join(', ')}`);
  return {
    codes,
    createdAfter: instant(req, ['created-after', 'created_after']),
    createdBefore: instant(req, ['created-before', 'created_before']),
    occurredAfter: instant(req, ['occurred-after', 'occurred_after']),
    occurredBefore: instant(req, ['occurred-before', 'occurred_before']),
    sort: sort?.value as EventSort | undefined,
    limit: count(req, 'limit', EVENT_PAGE_SIZE.default, EVENT_PAGE_SIZE.max),
    skip: count(req, 'skip', 0),
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

/** Logistics Events: create, read and list per object, and the bulk intake POST /logistics-events. */
export function logisticsEventRoutes(services: Services): Router {
  const router = express.Router();
  const { events, objects, config } = services;
  const rawBody = readBody(config.limits.bodyBytes);
  const representations = new EventRepresentations(events);
  const list = '/logistics-objects/:id/logistics-events';
  const objectOf = (req: Request) => objects.objectsPrefix + (req.params.id as string);

  router.post(list, rawBody, async (req, res) => {
    const caller = callerOf(res);
    const format = bodyFormat(req.headers['content-type'], true);
    const entry = events.postTarget(objectOf(req), caller);
    const quads = await parseBody(req.body as Buffer, format, { base: eventsPrefixOf(entry.iri), limits: config.limits, jsonLd: services.jsonLd });
    const created = await events.create(entry, quads, caller);
    sendCreated(res, created.iri, cargo.LogisticsEvent);
  });

  router.get(list, async (req, res) => {
    const negotiated = negotiate(req.headers.accept);
    const query = readEventQuery(req);
    const page = events.list(objectOf(req), callerOf(res), query);
    const body = await representations.collection(requestUrl(services, req), page, negotiated.format);
    setRepresentationHeaders(res, negotiated).setHeader('Type', api.Collection);
    res.send(body);
  });

  router.get(`${list}/:eventId`, async (req, res) => {
    const negotiated = negotiate(req.headers.accept);
    const view = events.read(objectOf(req), req.params.eventId as string, callerOf(res));
    const body = await serialise({ iri: view.record.iri, triples: view.triples }, negotiated.format);
    setRepresentationHeaders(res, negotiated, view.record.recordedAt).setHeader('Type', view.typeHeader);
    res.send(body);
  });

  router.post('/logistics-events', rawBody, async (req, res) => {
    const negotiated = negotiate(req.headers.accept, ['jsonld']);
    const format = bodyFormat(req.headers['content-type'], true);
    const quads = await parseBody(req.body as Buffer, format, { base: objects.objectsPrefix, limits: config.limits, jsonLd: services.jsonLd });
    const outcomes = await events.createMany(quads, callerOf(res));
    setRepresentationHeaders(res, negotiated).status(207);
    res.send(Buffer.from(withContext(multiStatusDocument(outcomes))));
  });

  // Events are immutable: no route changes or deletes them.
  router.all(`${list}/:eventId`, methodNotAllowed('GET, HEAD'));
  router.all(list, methodNotAllowed('GET, HEAD, POST'));
  router.all('/logistics-events', methodNotAllowed('POST'));
  return router;
}
