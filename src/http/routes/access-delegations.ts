import express, { type Router } from 'express';
import { api } from '../../rdf/vocab.js';
import { bodyFormat } from '../../rdf/parse.js';
import { bodyQuads, callerOf, type Services } from '../context.js';
import { methodNotAllowed } from '../documents.js';
import { sendCreated } from '../responses.js';
import { readBody } from '../body.js';

/** POST /access-delegations: an api:AccessDelegation becomes an AccessDelegationRequest (201, Location under /action-requests/; ONE Record API, "POST /access-delegations"). */
export function accessDelegationRoutes(services: Services): Router {
  const router = express.Router();
  const { config } = services;
  const rawBody = readBody(config.limits.bodyBytes);

  router.post('/access-delegations', rawBody, async (req, res) => {
    const format = bodyFormat(req.headers['content-type'], false);
    const quads = await bodyQuads(services, req, format);
    const request = await services.accessDelegations.submit(quads, callerOf(res));
    sendCreated(res, request.iri, api.AccessDelegationRequest);
  });

  router.all('/access-delegations', methodNotAllowed('POST'));
  return router;
}
