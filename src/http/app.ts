import type { RequestListener } from 'node:http';
import express, { type Express, type RequestHandler, type Router } from 'express';
import { HttpError } from '../errors.js';
import { healthRoutes, type Lifecycle } from '../observability/health.js';
import type { ServerMetrics } from '../observability/metrics.js';
import { metricsRoute } from '../observability/metrics-route.js';
import { requestLogLine, RequestObservation } from '../observability/request-log.js';
import { agentOf, type Services } from './context.js';
import type { Logger } from '../observability/logger.js';
import { errorAnswer, errorHandler } from './error-responses.js';
import { checkRequestHead } from './request-checks.js';
import { openApiRoutes } from './openapi.js';
import { identityProviderRoutes } from './routes/identity-provider.js';
import { apiRoutes } from './routes/api-routes.js';
import { sparqlPage } from './sparql-page.js';
import { shippedQueries } from '../domain/analytics/query-files.js';
import { consoleRoutes } from './console.js';
import { gatedRouters } from './router-gate.js';
import { withObjectFastPath } from './object-fast-path.js';
import { objectHandlers } from './routes/logistics-objects.js';
import { withCors } from './cors.js';
import { RequestPipeline } from './pipeline.js';
import { stageMiddleware } from './stage.js';
import { Representations } from './representations.js';

function bareApp(): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  return app;
}

/** An app that is not the API's (starting, metrics port): the request head's check, then `handlers`. */
function smallApp(...handlers: (Router | RequestHandler)[]): Express {
  const app = bareApp();
  app.use(stageMiddleware(checkRequestHead), ...handlers);
  return app;
}

/** Ends an app: 404 for anything no route took, then the one error handler. */
function withNotFoundAndErrors(app: Express, logger: Logger): Express {
  app.use((req, _res, next) => next(new HttpError(404, 'no_route', { message: `no resource at ${req.path}` })));
  app.use(errorHandler(logger));
  return app;
}

/**
 * The API's request listener: GET and HEAD of a Logistics Object's latest revision, POST of objects
 * and PATCH of one by the object fast path (object-fast-path.ts), everything else by the express
 * application, both through the one request pipeline (pipeline.ts). CORS (cors.ts) around both,
 * when origins are configured.
 */
export function createApp(services: Services): RequestListener {
  const representations = new Representations(services.objects, services.config.cache.serializedRevisionBytes);
  const { metrics, logger } = services;
  const observation = new RequestObservation(
    metrics ? [requestLogLine(logger, agentOf), metrics.observeRequest] : [requestLogLine(logger, agentOf)],
  );
  const pipeline = new RequestPipeline(services, observation);
  const app = createExpressApp(services, representations, pipeline);
  const handlers = objectHandlers(services, representations);
  const listener = withObjectFastPath(handlers, pipeline, errorAnswer(logger), app);
  const ordered = services.caughtUp ? afterEarlierCommits(services.caughtUp, listener) : listener;
  return withCors(services.config.http.cors.allowedOrigins, ordered);
}

/**
 * With several server processes over one store: a request is handled once this process has seen
 * every commit acknowledged before it arrived, through whichever process (read-your-writes behind a
 * load balancer). Health probes do not wait; when the store cannot tell, the request goes on and
 * meets the store's own answer.
 */
function afterEarlierCommits(caughtUp: () => Promise<void>, listener: RequestListener): RequestListener {
  return (req, res) => {
    if (req.url?.startsWith('/health')) return listener(req, res);
    const go = () => listener(req, res);
    caughtUp().then(go, go);
  };
}

/**
 * The express application: the request pipeline (pipeline.ts) with the routers at their places:
 * health probes (public, not logged); `/metrics` when a metrics token is configured, the OpenAPI
 * document, the web console, the identity provider and the SPARQL page (public); the API routes.
 * `representations` and `pipeline` are the object fast path's too.
 */
export function createExpressApp(
  services: Services,
  representations: Representations,
  pipeline: RequestPipeline,
): Express {
  const { metrics, identityProvider, config } = services;
  const publicRouters: (Router | RequestHandler)[] = [
    ...(metrics && config.metrics.token ? [metricsRoute(metrics, config.metrics.token)] : []),
    openApiRoutes(config.baseUrl),
    consoleRoutes(config.baseUrl),
    ...(identityProvider ? [express.Router().use('/idp', identityProviderRoutes(identityProvider))] : []),
    express.Router().get('/sparql', sparqlPage(shippedQueries())),
  ];
  const app = bareApp();
  // One layer: each router is entered only by requests it may answer, each stage by every request
  // (router-gate.ts). Routers at one place have paths of their own: their order there does not
  // change which one answers.
  app.use(
    gatedRouters(
      pipeline.expressHandlers({
        unobserved: [healthRoutes(services.lifecycle)],
        public: publicRouters,
        api: apiRoutes(services, representations),
      }),
    ),
  );
  return withNotFoundAndErrors(app, services.logger);
}

/** While the store loads: health probes, and 503 for everything else (which pages of allowed origins can read). */
export function createStartingApp(lifecycle: Lifecycle, logger: Logger, origins: readonly string[]): RequestListener {
  const app = smallApp(healthRoutes(lifecycle), (_req, _res, next) =>
    next(new HttpError(503, 'starting', { message: 'the server is starting (loading its store); try again shortly' })),
  );
  app.use(errorHandler(logger));
  return withCors(origins, app);
}

/** The separate metrics port: `/metrics` without a token (the port's address protects it) and health probes. */
export function createMetricsApp(metrics: ServerMetrics, lifecycle: Lifecycle, logger: Logger): Express {
  return withNotFoundAndErrors(smallApp(healthRoutes(lifecycle), metricsRoute(metrics)), logger);
}
