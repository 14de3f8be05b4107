import express, { type Request, type Router } from 'express';
import type { AuditFilter } from '../../domain/requests/change-requests.js';
import { badQuery } from '../../errors.js';
import { namedNode, quad, xsdLiteral, type Quad } from '../../rdf/terms.js';
import { api, rdf, xsd } from '../../rdf/vocab.js';
import type { ActionRequests } from '../../domain/requests/action-requests.js';
import type { ChangeRequests } from '../../domain/requests/change-requests.js';
import { callerOf } from '../context.js';
import { parseInstant, parseRequestStatus, queryParam, singleQueryValue } from '../query-params.js';
import { methodNotAllowed, serialise } from '../documents.js';
import { negotiate } from '../negotiation.js';
import { setRepresentationHeaders } from '../responses.js';

/** `updated-from`, `updated-to` (also camelCase) and `status` (comma separated, short or full names). */
function readFilter(req: Request): AuditFilter {
  const from = singleQueryValue(req, ['updated-from', 'updatedFrom']);
  const to = singleQueryValue(req, ['updated-to', 'updatedTo']);
  const status = queryParam(req, 'status');
  const filter: AuditFilter = {
    from: from && parseInstant(from.value, from.name),
    to: to && parseInstant(to.value, to.name),
    statuses: status === undefined ? undefined : new Set(status.split(',').map((v) => parseRequestStatus(v, 'status'))),
  };
  if (filter.from && filter.to && filter.from > filter.to)
    throw badQuery(from!.name, `${from!.name} must not be after ${to!.name}`);
  return filter;
}

export interface AuditTrailRouteDeps {
  changeRequests: ChangeRequests;
  actionRequests: ActionRequests;
  objectsPrefix: string;
}

/**
 * GET /logistics-objects/{id}/audit-trail in JSON-LD, Turtle or N-Triples (ONE Record API,
 * "GET /logistics-objects/<logistics_object_id>/audit-trail").
 */
export function auditTrailRoutes({ changeRequests, actionRequests, objectsPrefix }: AuditTrailRouteDeps): Router {
  const router = express.Router();
  const path = '/logistics-objects/:id/audit-trail';

  router.get(path, async (req, res) => {
    const negotiated = negotiate(req.headers.accept);
    const trail = await changeRequests.auditTrail(
      objectsPrefix + (req.params.id as string),
      callerOf(res),
      readFilter(req),
    );
    const iri = `${trail.entry.iri}/audit-trail`;
    const s = namedNode(iri);
    const triples: Quad[] = [
      quad(s, namedNode(rdf.type), namedNode(api.AuditTrail)),
      quad(s, namedNode(api.hasLatestRevision), xsdLiteral(trail.latestRevision, xsd.positiveInteger)),
    ];
    // 2.3 names the list hasActionRequest, 2.0 hasChangeRequest; the JSON-LD writer nests each request under the first.
    for (const predicate of [api.hasActionRequest, api.hasChangeRequest])
      for (const r of trail.requests) triples.push(quad(s, namedNode(predicate), namedNode(r.iri)));
    for (const representation of await Promise.all(trail.requests.map((r) => actionRequests.representation(r))))
      triples.push(...representation);
    const body = await serialise({ iri, triples }, negotiated.format);
    setRepresentationHeaders(res, negotiated).setHeader('Type', api.AuditTrail);
    res.send(body);
  });

  router.all(path, methodNotAllowed('GET, HEAD'));
  return router;
}
