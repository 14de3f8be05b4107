import type { RequestListener } from 'node:http';
import express, { type Express } from 'express';
import { HttpError } from '../errors.js';
import { healthRoutes, type Lifecycle } from '../observability/health.js';
import type { ServerMetrics } from '../observability/metrics.js';
import { metricsRoute } from '../observability/metrics-route.js';
import { requestLogLine, RequestObservation } from '../observability/request-log.js';
import { agentOf, authenticate, type Services } from './context.js';
import type { Logger } from '../observability/logger.js';
import { errorHandler } from './error-responses.js';
import { checkRequestHead } from './request-checks.js';
import { openApiRoutes } from './openapi.js';
import { identityProviderRoutes } from './routes/identity-provider.js';
import { logisticsEventRoutes } from './routes/logistics-events.js';
import { logisticsObjectRoutes } from './routes/logistics-objects.js';
import { actionRequestRoutes } from './routes/action-requests.js';
import { auditTrailRoutes } from './routes/audit-trail.js';
import { accessDelegationRoutes } from './routes/access-delegations.js';
import { internalAclRoutes } from './routes/internal-acl.js';
import { serverInformationRoutes } from './routes/server-information.js';
import { internalMoveRoutes, movedObjectRedirects } from './routes/moved-objects.js';
import { shapesRoutes } from './routes/shapes.js';
import { sparqlRoutes } from './routes/sparql.js';
import { sparqlPage } from './sparql-page.js';
import { shippedQueries } from '../domain/analytics/query-files.js';
import { notificationRoutes } from './routes/notifications.js';
import { subscriptionRoutes } from './routes/subscriptions.js';
import { outboxRoutes } from './routes/outbox.js';
import { internalObjectRoutes } from './routes/internal-objects.js';
import { consoleRoutes } from './console.js';
import { gatedRouters } from './router-gate.js';
import { withObjectFastPath } from './object-fast-path.js';
import { withCors } from './cors.js';
import { Representations } from './representations.js';

function bareApp(): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  app.use(checkRequestHead);
  return app;
}

/** Ends an app: 404 for anything no route took, then the one error handler. */
function withNotFoundAndErrors(app: Express, logger: Logger): Express {
  app.use((req, _res, next) => next(new HttpError(404, 'no_route', { message: `no resource at ${req.path}` })));
  app.use(errorHandler(logger));
  return app;
}

/**
 * The API's request listener: GET and HEAD of a Logistics Object when they can be answered at once,
 * and POST and PATCH of objects, on their fast path (object-fast-path.ts); everything else by the
 * express application. CORS (cors.ts) around both, when origins are configured.
 */
export function createApp(services: Services): RequestListener {
  const representations = new Representations(services.objects, services.config.cache.serializedRevisions);
  const { metrics } = services;
  const observation = new RequestObservation(
    metrics
      ? [requestLogLine(services.logger, agentOf), metrics.observeRequest]
      : [requestLogLine(services.logger, agentOf)],
  );
  const listener = withObjectFastPath(
    services,
    representations,
    observation,
    createExpressApp(services, representations, observation),
  );
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
 * The express application: health probes (public, not logged), request ids, logs and metrics,
 * `/metrics` when a metrics token is configured, the identity provider, the SPARQL page and the
 * web console (public), then authenticated API routes. `representations` and `observation` are
 * the fast path's too.
 */
export function createExpressApp(
  services: Services,
  representations: Representations,
  observation: RequestObservation,
): Express {
  const app = bareApp();
  const { metrics } = services;
  // Each group is one layer of the app: its routers are entered only by requests they may answer,
  // its plain middleware by every request (router-gate.ts). Within a group, routers with paths of
  // their own, so their order does not change which one answers.
  app.use(
    gatedRouters([
      healthRoutes(services.lifecycle),
      observation.middleware,
      ...(metrics && services.config.metrics.token ? [metricsRoute(metrics, services.config.metrics.token)] : []),
      openApiRoutes(services.config.baseUrl),
      consoleRoutes(services.config.baseUrl),
    ]),
  );
  if (services.identityProvider) app.use('/idp', identityProviderRoutes(services.identityProvider));
  app.get('/sparql', sparqlPage(shippedQueries()));
  app.use(
    gatedRouters([
      authenticate(services),
      // First of the API routes: the one a server receiving a fan-out is called on most.
      ...[
        notificationRoutes,
        serverInformationRoutes,
        movedObjectRedirects,
        shapesRoutes,
        (s: Services) => logisticsObjectRoutes(s, representations),
        auditTrailRoutes,
        actionRequestRoutes,
        logisticsEventRoutes,
        subscriptionRoutes,
        outboxRoutes,
        internalMoveRoutes,
        accessDelegationRoutes,
        internalAclRoutes,
        internalObjectRoutes,
        sparqlRoutes,
      ].map((routes) => routes(services)),
    ]),
  );
  return withNotFoundAndErrors(app, services.logger);
}

/** While the store loads: health probes, and 503 for everything else (which pages of allowed origins can read). */
export function createStartingApp(lifecycle: Lifecycle, logger: Logger, origins: readonly string[]): RequestListener {
  const app = bareApp();
  app.use(healthRoutes(lifecycle));
  app.use((_req, _res, next) =>
    next(new HttpError(503, 'starting', { message: 'the server is starting (loading its store); try again shortly' })),
  );
  app.use(errorHandler(logger));
  return withCors(origins, app);
}

/** The separate metrics port: `/metrics` without a token (the port's address protects it) and health probes. */
export function createMetricsApp(metrics: ServerMetrics, lifecycle: Lifecycle, logger: Logger): Express {
  const app = bareApp();
  app.use(healthRoutes(lifecycle));
  app.use(metricsRoute(metrics));
  return withNotFoundAndErrors(app, logger);
}
