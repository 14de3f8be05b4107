import express, { type Router } from 'express';
import { api } from '../../rdf/vocab.js';
import { bodyFormat } from '../../rdf/parse.js';
import type { AccessDelegations } from '../../domain/requests/access-delegations.js';
import { bodyQuads, callerOf, type BodyReading } from '../context.js';
import { methodNotAllowed } from '../documents.js';
import { sendCreated } from '../responses.js';
import { readBody } from '../body.js';

export interface AccessDelegationRouteDeps {
  accessDelegations: AccessDelegations;
  bodyReading: BodyReading;
}

/**
 * POST /access-delegations: an api:AccessDelegation becomes an AccessDelegationRequest (201, Location
 * under /action-requests/; ONE Record API, "POST /access-delegations").
 */
export function accessDelegationRoutes({ accessDelegations, bodyReading }: AccessDelegationRouteDeps): Router {
  const router = express.Router();
  const rawBody = readBody(bodyReading.limits.bodyBytes);

  router.post('/access-delegations', rawBody, async (req, res) => {
    const format = bodyFormat(req.headers['content-type'], false);
    const quads = await bodyQuads(bodyReading, req, res, format);
    const request = await accessDelegations.submit(quads, callerOf(res));
    sendCreated(res, request.iri, api.AccessDelegationRequest);
  });

  router.all('/access-delegations', methodNotAllowed('POST'));
  return router;
}
