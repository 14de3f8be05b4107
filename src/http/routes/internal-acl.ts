import express, { type Request, type Router } from 'express';
import type { GrantFilter, Grants } from '../../domain/requests/grants.js';
import { acl, api } from '../../rdf/vocab.js';
import { bodyFormat } from '../../rdf/parse.js';
import type { Authorizer } from '../../domain/access/authorizer.js';
import { bodyQuads, callerOf, requestUrl, type BodyReading } from '../context.js';
import { collectionTriples, methodNotAllowed, serialise } from '../documents.js';
import { CONTENT_LANGUAGE, negotiate } from '../negotiation.js';
import { queryParam } from '../query-params.js';
import { sendCreated, setRepresentationHeaders } from '../responses.js';
import { readBody } from '../body.js';

const filterOf = (req: Request): GrantFilter => ({
  object: queryParam(req, 'object'),
  agent: queryParam(req, 'agent'),
});

export interface InternalAclRouteDeps {
  grants: Grants;
  access: Authorizer;
  bodyReading: BodyReading;
  baseUrl: string;
}

/**
 * Operator routes of access control (internal actors only, docs/access-control.md):
 * POST /internal/acl (an acl:Authorization), GET /internal/acl?object=&agent= (a Collection of
 * grants), GET/DELETE /internal/acl/{id}, DELETE /internal/acl?object=&agent=, and
 * GET /internal/access?object=&agent= (which permissions, and the chain of grants and delegations behind each).
 */
export function internalAclRoutes({ grants, access, bodyReading, baseUrl }: InternalAclRouteDeps): Router {
  const router = express.Router();
  const rawBody = readBody(bodyReading.limits.bodyBytes);
  const iriOf = (req: Request) => grants.prefix + (req.params.id as string);

  router.post('/internal/acl', rawBody, async (req, res) => {
    const caller = callerOf(res);
    access.check(caller, { kind: 'operate', what: 'managing access control' });
    const format = bodyFormat(req.headers['content-type'], true);
    const quads = await bodyQuads(bodyReading, req, res, format);
    const created = await grants.create(quads, caller);
    sendCreated(res, created[0].iri, acl.Authorization);
  });

  router.get('/internal/acl', async (req, res) => {
    const negotiated = negotiate(req.headers.accept);
    const list = grants.list(callerOf(res), filterOf(req));
    const url = requestUrl(baseUrl, req);
    const triples = collectionTriples(
      url,
      list.length,
      list.map((g) => g.iri),
    );
    for (const g of list) triples.push(...grants.representation(g));
    const body = await serialise({ iri: url, triples }, negotiated.format);
    setRepresentationHeaders(res, negotiated).setHeader('Type', api.Collection);
    res.send(body);
  });

  router.delete('/internal/acl', async (req, res) => {
    await grants.revokeMatching(filterOf(req), callerOf(res));
    res.status(204).setHeader('Content-Language', CONTENT_LANGUAGE).end();
  });

  router.get('/internal/acl/:id', async (req, res) => {
    const negotiated = negotiate(req.headers.accept);
    const grant = grants.get(iriOf(req), callerOf(res));
    const body = await serialise({ iri: grant.iri, triples: grants.representation(grant) }, negotiated.format);
    setRepresentationHeaders(res, negotiated, grant.grantedAt).setHeader('Type', acl.Authorization);
    res.send(body);
  });

  router.delete('/internal/acl/:id', async (req, res) => {
    await grants.revoke(iriOf(req), callerOf(res));
    res.status(204).setHeader('Content-Language', CONTENT_LANGUAGE).end();
  });

  router.get('/internal/access', async (req, res) => {
    const { object, agent } = filterOf(req);
    const caller = callerOf(res);
    const explained = await grants.explain(object, agent ?? caller.agent, caller);
    res.setHeader('Content-Language', CONTENT_LANGUAGE);
    res.json(explained);
  });

  router.all('/internal/acl', methodNotAllowed('GET, HEAD, POST, DELETE'));
  router.all('/internal/acl/:id', methodNotAllowed('GET, HEAD, DELETE'));
  router.all('/internal/access', methodNotAllowed('GET, HEAD'));
  return router;
}
