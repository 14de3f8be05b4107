import express, { type Express } from 'express';
import { HttpError } from '../errors.js';
import { authenticate, type Services } from './context.js';
import { errorHandler } from './error-responses.js';
import { checkRequestHead } from './request-checks.js';
import { identityProviderRoutes } from './routes/identity-provider.js';
import { logisticsEventRoutes } from './routes/logistics-events.js';
import { logisticsObjectRoutes } from './routes/logistics-objects.js';
import { actionRequestRoutes } from './routes/action-requests.js';
import { auditTrailRoutes } from './routes/audit-trail.js';
import { serverInformationRoutes } from './routes/server-information.js';
import { internalMoveRoutes, movedObjectRedirects } from './routes/moved-objects.js';

/** The express application: identity provider (public), then authenticated API routes. */
export function createApp(services: Services): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  app.use(checkRequestHead);
  if (services.identityProvider) app.use('/idp', identityProviderRoutes(services.identityProvider));
  app.use(authenticate(services));
  app.use(serverInformationRoutes(services));
  app.use(movedObjectRedirects(services));
  app.use(logisticsObjectRoutes(services));
  app.use(auditTrailRoutes(services));
  app.use(actionRequestRoutes(services));
  app.use(logisticsEventRoutes(services));
  app.use(internalMoveRoutes(services));
  app.use((req, _res, next) => next(new HttpError(404, 'no_route', { message: `no resource at ${req.path}` })));
  app.use(errorHandler(services.log));
  return app;
}
