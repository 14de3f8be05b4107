import express, { type Router } from 'express';
import { api } from '../../rdf/vocab.js';
import { bodyFormat, parseBody } from '../../rdf/parse.js';
import { callerOf, type Services } from '../context.js';
import { methodNotAllowed } from '../documents.js';
import { sendCreated } from '../responses.js';
import { readBody } from '../body.js';

/** POST /access-delegations: an api:AccessDelegation becomes an AccessDelegationRequest (201, Location under /action-requests/). */
export function accessDelegationRoutes(services: Services): Router {
  const router = express.Router();
  const { config, objects } = services;
  const rawBody = readBody(config.limits.bodyBytes);

  router.post('/access-delegations', rawBody, async (req, res) => {
    const format = bodyFormat(req.headers['content-type'], false);
    const quads = await parseBody(req.body as Buffer, format, { base: objects.objectsPrefix, limits: config.limits, jsonLd: services.jsonLd });
    const request = await services.accessDelegations.submit(quads, callerOf(res));
    sendCreated(res, request.iri, api.AccessDelegationRequest);
  });

  router.all('/access-delegations', methodNotAllowed('POST'));
  return router;
}
