import express, { type Request, type Router } from 'express';
import { CARGO } from '../../rdf/vocab.js';
import type { Authorizer } from '../../domain/access/authorizer.js';
import type { RevisionIndex } from '../../domain/objects/revision-index.js';
import { callerOf } from '../context.js';
import { methodNotAllowed } from '../documents.js';
import { CONTENT_LANGUAGE } from '../negotiation.js';
import { queryCount, queryInstant, queryParam } from '../query-params.js';

/** A type as given in the query: an IRI, `cargo:Piece` or `Piece` (the cargo ontology's classes). */
function typeIri(req: Request): string | undefined {
  const type = queryParam(req, 'type');
  if (type === undefined || type.includes('://')) return type;
  return CARGO + type.replace(/^cargo:/, '');
}

export interface InternalObjectRouteDeps {
  access: Authorizer;
  /** The objects and their latest revisions, which the list reads. */
  revisions: RevisionIndex;
}

/**
 * GET /internal/logistics-objects (internal actors): the Logistics Objects this server holds, most
 * recently changed first, by `type`, `id` (part of the IRI) and `changed-after`; `skip` and
 * `limit` page it. Plain JSON, for the web console's object list.
 */
export function internalObjectRoutes({ access, revisions }: InternalObjectRouteDeps): Router {
  const router = express.Router();

  router.get('/internal/logistics-objects', async (req, res) => {
    access.check(callerOf(res), { kind: 'operate', what: 'listing Logistics Objects' });
    const filter = {
      type: typeIri(req),
      idContains: queryParam(req, 'id'),
      changedAfter: queryInstant(req, ['changed-after']),
    };
    const { total, page, types } = await revisions.list(
      filter,
      queryCount(req, 'skip', 0),
      queryCount(req, 'limit', 50, 1000),
    );
    res.setHeader('Content-Language', CONTENT_LANGUAGE).json({
      total,
      types,
      objects: page.map(({ iri, creator, latest }) => ({
        iri,
        type: latest.mostSpecificType,
        creator,
        revision: latest.number,
        changedAt: latest.createdAt.toISOString(),
        changedBy: latest.createdBy,
      })),
    });
  });
  router.all('/internal/logistics-objects', methodNotAllowed('GET, HEAD'));
  return router;
}
