import type { RequestHandler, Router } from 'express';
import type { Services } from '../context.js';
import type { Representations } from '../representations.js';
import { accessDelegationRoutes } from './access-delegations.js';
import { actionRequestRoutes } from './action-requests.js';
import { auditTrailRoutes } from './audit-trail.js';
import { internalAclRoutes } from './internal-acl.js';
import { internalObjectRoutes } from './internal-objects.js';
import { logisticsEventRoutes } from './logistics-events.js';
import { logisticsObjectRoutes } from './logistics-objects.js';
import { internalMoveRoutes } from './moved-objects.js';
import { notificationRoutes } from './notifications.js';
import { outboxRoutes } from './outbox.js';
import { serverInformationRoutes } from './server-information.js';
import { shapesRoutes } from './shapes.js';
import { sparqlRoutes } from './sparql.js';
import { subscriptionRoutes } from './subscriptions.js';

/**
 * The authenticated API's routers, each given what it uses, in the order they are tried (moved
 * objects are redirected before, by the request pipeline: src/http/pipeline.ts).
 */
export function apiRoutes(services: Services, representations: Representations): (Router | RequestHandler)[] {
  const { config, access, objects, actionRequests, changeRequests, moves, bodyReading, holder, startedAt } = services;
  const { baseUrl } = config;
  const { objectsPrefix } = objects;
  return [
    // First: the one a server receiving a fan-out is called on most.
    notificationRoutes({ receivedNotifications: services.receivedNotifications, bodyReading, baseUrl }),
    serverInformationRoutes({ baseUrl, holder, startedAt }),
    shapesRoutes({ strict: config.validation.strict, startedAt }),
    logisticsObjectRoutes({ objects, access, changeRequests, bodyReading }, representations),
    auditTrailRoutes({ changeRequests, actionRequests, objectsPrefix }),
    actionRequestRoutes({ actionRequests, baseUrl }),
    logisticsEventRoutes({ events: services.events, objectsPrefix, bodyReading, baseUrl }),
    subscriptionRoutes({
      subscriptions: services.subscriptions,
      remoteSubscriptions: services.remoteSubscriptions,
      ontology: services.ontology,
      holder,
      bodyReading,
      baseUrl,
    }),
    outboxRoutes({ access, delivery: services.delivery, deadLetters: services.deadLetters }),
    internalMoveRoutes({ moves, access, objectsPrefix }),
    accessDelegationRoutes({ accessDelegations: services.accessDelegations, bodyReading }),
    internalAclRoutes({ grants: services.grants, access, bodyReading, baseUrl }),
    internalObjectRoutes({ access, revisions: objects.index }),
    sparqlRoutes({ analytics: services.analytics, bodyBytes: config.limits.bodyBytes }),
  ];
}
