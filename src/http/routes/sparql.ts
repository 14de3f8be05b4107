import express, { type Request, type Response, type Router } from 'express';
import { HttpError, badQuery } from '../../errors.js';
import {
  FORMATS_OF,
  RESULT_MEDIA_TYPES,
  VIEWS,
  type Analytics,
  type QueryForm,
  type ResultFormat,
  type View,
} from '../../domain/analytics/analytics.js';
import { answeringReadErrors, withinCallerBudget } from '../body.js';
import { callerOf } from '../context.js';
import { methodNotAllowed } from '../documents.js';
import { chooseOffer, CONTENT_LANGUAGE } from '../negotiation.js';

/** Media types a client may ask for, by the format they name. */
const ACCEPTED: Readonly<Record<string, readonly ResultFormat[]>> = {
  'application/sparql-results+json': ['json'],
  'application/json': ['json', 'jsonld'],
  'application/sparql-results+xml': ['xml'],
  'application/xml': ['xml'],
  'text/xml': ['xml'],
  'text/csv': ['csv'],
  'text/tab-separated-values': ['tsv'],
  'text/turtle': ['turtle'],
  'application/x-turtle': ['turtle'],
  'application/n-triples': ['ntriples'],
  'text/plain': ['ntriples'],
  'application/ld+json': ['jsonld'],
};

/** Header set when the answer holds only the first rows (or triples) up to the configured cap. */
export const TRUNCATED_HEADER = 'SPARQL-Results-Truncated';

/**
 * Header on every answer: how far the query replica was behind the store, `0` when the answer
 * shows every write acknowledged before the query arrived, else `<ms>; writes=<n>`: the n writes
 * it does not show, the oldest acknowledged ms milliseconds before the answer.
 */
export const REPLICA_LAG_HEADER = 'SPARQL-Replica-Lag';

/** The media types a format answers to: the one it is served as first, then the other names of ACCEPTED. */
const mediaTypesOf = (format: ResultFormat): string[] => [
  RESULT_MEDIA_TYPES[format],
  ...Object.keys(ACCEPTED).filter((type) => type !== RESULT_MEDIA_TYPES[format] && ACCEPTED[type].includes(format)),
];

/** The result format for `form` that `Accept` prefers, by RFC 9110 as every answer (negotiation.ts); else 406. */
function resultFormat(accept: string | undefined, form: QueryForm): ResultFormat {
  const offered = FORMATS_OF[form];
  const choice = chooseOffer(accept, offered, mediaTypesOf);
  if (choice) return choice.offer;
  throw new HttpError(406, 'not_acceptable', {
    message: `a ${form} query can be answered as ${offered.map((f) => RESULT_MEDIA_TYPES[f]).join(', ')}`,
  });
}

type Parameters = Record<string, unknown>;

const values = (params: Parameters, name: string): string[] => {
  const raw = params[name];
  return (Array.isArray(raw) ? raw : raw === undefined ? [] : [raw]).filter((v): v is string => typeof v === 'string');
};

function single(params: Parameters, name: string): string | undefined {
  const given = values(params, name);
  if (given.length > 1) throw badQuery(name, `give ${name} once`);
  return given[0];
}

/** The request's protocol parameters: the query string, plus the form fields of a form POST. */
function protocolParameters(req: Request): { params: Parameters; query?: string } {
  const params: Parameters = { ...(req.query as Parameters) };
  if (req.method !== 'POST') return { params, query: single(params, 'query') };
  const type = (req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
  if (type === 'application/sparql-query') {
    if (params.query !== undefined)
      throw badQuery(
        'query',
        'with an application/sparql-query body, the query is the body: leave out the query parameter',
      );
    return { params, query: typeof req.body === 'string' ? req.body : '' };
  }
  if (type === 'application/x-www-form-urlencoded') {
    const form = (req.body ?? {}) as Parameters;
    for (const [name, value] of Object.entries(form))
      params[name] = params[name] === undefined ? value : [...values(params, name), ...values(form, name)];
    return { params, query: single(params, 'query') };
  }
  if (type === 'application/sparql-update')
    throw badQuery('update', 'this endpoint is read-only: SPARQL updates are not accepted');
  throw new HttpError(415, 'unsupported_content_type', {
    message:
      'send the query as application/sparql-query or as the query field of an application/x-www-form-urlencoded body',
  });
}

export interface SparqlRouteDeps {
  /** SPARQL queries on the query worker's replica. */
  analytics: Analytics;
  /** The largest query body read (`limits.bodyBytes`). */
  bodyBytes: number;
}

/**
 * GET and POST /sparql: the SPARQL 1.1 Protocol, read-only. `query` in the query string, a form
 * field or an application/sparql-query body; `default-graph-uri` / `named-graph-uri`; `view`
 * picks the dataset (latest revisions, all revisions, events, audit trail).
 */
export function sparqlRoutes({ analytics, bodyBytes }: SparqlRouteDeps): Router {
  const router = express.Router();
  const handle = async (req: Request, res: Response) => {
    const caller = callerOf(res);
    const { params, query } = protocolParameters(req);
    if (params.update !== undefined)
      throw badQuery('update', 'this endpoint is read-only: SPARQL updates are not accepted');
    if (query === undefined || query.trim() === '')
      throw badQuery('query', 'give a SPARQL query in the query parameter (or as an application/sparql-query body)');
    const viewName = single(params, 'view') ?? 'latest';
    if (!(VIEWS as readonly string[]).includes(viewName))
      throw badQuery('view', `view must be one of ${VIEWS.join(', ')}`);
    const view = viewName as View;
    const parsed = analytics.prepare(caller, query, view);
    const format = resultFormat(req.headers.accept, parsed.form);
    const result = await analytics.run(caller, {
      query: parsed,
      view,
      format,
      defaultGraphs: values(params, 'default-graph-uri'),
      namedGraphs: values(params, 'named-graph-uri'),
    });
    res.setHeader('Content-Type', `${RESULT_MEDIA_TYPES[format]}; charset=utf-8`);
    res.setHeader('Content-Language', CONTENT_LANGUAGE);
    res.setHeader('Cache-Control', 'no-store');
    if (result.truncated) res.setHeader(TRUNCATED_HEADER, `true; max-rows=${analytics.maxRows}`);
    res.setHeader(
      REPLICA_LAG_HEADER,
      result.lag.commits === 0 ? '0' : `${result.lag.millis}; writes=${result.lag.commits}`,
    );
    res.send(result.body);
  };
  router.get('/sparql', handle);
  router.post(
    '/sparql',
    withinCallerBudget(answeringReadErrors(express.text({ type: 'application/sparql-query', limit: bodyBytes }))),
    withinCallerBudget(answeringReadErrors(express.urlencoded({ extended: false, limit: bodyBytes }))),
    handle,
  );
  router.all('/sparql', methodNotAllowed('GET, POST'));
  return router;
}
