import type { ServerResponse } from 'node:http';
import type { Request, Response, NextFunction, RequestHandler } from 'express';
import type { Authorizer, Caller } from '../domain/access/authorizer.js';
import type { IdentityProvider } from '../auth/identity-provider.js';
import type { TokenVerifier } from '../auth/token-verifier.js';
import type { Config } from '../config.js';
import { CallerBudget } from './caller-budget.js';
import { parseBody, type BodyFormat } from '../rdf/parse.js';
import type { Quad } from '../rdf/terms.js';
import type { LogisticsEvents } from '../domain/events/logistics-events.js';
import type { LogisticsObjects } from '../domain/objects/logistics-objects.js';
import type { ActionRequests } from '../domain/requests/action-requests.js';
import type { ChangeRequests } from '../domain/requests/change-requests.js';
import type { AccessDelegations } from '../domain/access/access-delegations.js';
import type { Grants } from '../domain/access/grants.js';
import type { Analytics } from '../domain/analytics/analytics.js';
import type { ReceivedNotifications } from '../domain/pubsub/received-notifications.js';
import type { CargoOntology } from '../rdf/ontology.js';
import type { Subscriptions } from '../domain/pubsub/subscriptions.js';
import type { DeadLetters } from '../domain/pubsub/dead-letters.js';
import type { LeasedDelivery } from '../domain/pubsub/leased-delivery.js';
import type { RemoteSubscriptions } from '../domain/pubsub/remote-subscriptions.js';
import type { JsonLdFallback } from '../rdf/jsonld-fallback.js';
import type { MovedObjects } from '../domain/moves/moved-objects.js';
import type { Lifecycle } from '../observability/health.js';
import type { Logger } from '../observability/logger.js';
import type { ServerMetrics } from '../observability/metrics.js';

/** Everything the routes use, created once in main and passed down. */
export interface Services {
  config: Config;
  /** Every access decision goes through it. */
  access: Authorizer;
  verifier: TokenVerifier;
  identityProvider?: IdentityProvider;
  objects: LogisticsObjects;
  actionRequests: ActionRequests;
  changeRequests: ChangeRequests;
  accessDelegations: AccessDelegations;
  grants: Grants;
  events: LogisticsEvents;
  /** SPARQL queries on the query worker's replica. */
  analytics: Analytics;
  receivedNotifications: ReceivedNotifications;
  ontology: CargoOntology;
  subscriptions: Subscriptions;
  /** The notification outbox being delivered. */
  delivery: LeasedDelivery;
  deadLetters: DeadLetters;
  /** Subscriptions this server holds at other servers. */
  remoteSubscriptions: RemoteSubscriptions;
  /** Each caller's requests and body bytes in flight, within `limits.perCaller`. */
  callerBudget: CallerBudget;
  /** jsonld.js off the request thread, for bodies the fast JSON-LD reader leaves to it. */
  jsonLd: JsonLdFallback;
  moves: MovedObjects;
  holder: string;
  startedAt: Date;
  logger: Logger;
  lifecycle: Lifecycle;
  /** Present when `metrics.token` or `metrics.port` is set. */
  metrics?: ServerMetrics;
  /** With several server processes over one store: resolves once this process has seen every commit acknowledged before the call. */
  caughtUp?: () => Promise<void>;
}

const CALLER = Symbol('caller');
const VERIFYING = Symbol('verifying');
type WithCaller = ServerResponse & { [CALLER]?: Caller; [VERIFYING]?: Promise<string> };

/**
 * Remembers the authenticated caller of a request, for its route and its log line (which names a
 * refused caller too), and lets the request in if the caller's budget has room (caller-budget.ts).
 */
export function admit(budget: CallerBudget, res: ServerResponse, caller: Caller): boolean {
  (res as WithCaller)[CALLER] = caller;
  return budget.enter(res, caller);
}

/**
 * Hands the verification of a request's token, begun before express (object-fast-path.ts), to
 * `authenticate`, which would otherwise verify the token a second time.
 */
export function handOverVerification(res: ServerResponse, verifying: Promise<string>): void {
  (res as WithCaller)[VERIFYING] = verifying;
}

/** Verifies the bearer token and remembers the caller for the route; 429 for a caller past its budget. */
export function authenticate(services: Services): RequestHandler {
  const { callerBudget } = services;
  const admitted = (res: Response, next: NextFunction, agent: string) => {
    next(admit(callerBudget, res, services.access.caller(agent)) ? undefined : callerBudget.refusal());
  };
  return (req: Request, res: Response, next: NextFunction) => {
    const agent = (res as WithCaller)[VERIFYING] ?? services.verifier.verify(req.headers.authorization);
    // A token verified before: no closure, no promise.
    if (typeof agent === 'string') return admitted(res, next, agent);
    return agent.then((verified) => admitted(res, next, verified));
  };
}

/** The agent of an authenticated request, for logs; undefined before or without authentication. */
export function agentOf(res: ServerResponse): string | undefined {
  return (res as WithCaller)[CALLER]?.agent;
}

export function callerOf(res: ServerResponse): Caller {
  const caller = (res as WithCaller)[CALLER];
  if (!caller) throw new Error('route reached without authentication');
  return caller;
}

/** The absolute URL of the request, on the configured base. */
export function requestUrl(services: Services, req: Request): string {
  return `${services.config.baseUrl}${req.originalUrl}`;
}

/**
 * A request's body, read by `readBody`, as quads in `format` (decided by the route, which may check
 * other things first): IRIs resolved against `base`, the objects' by default, within the configured
 * limits, JSON-LD outside the fast path's subset on the services' worker, within the caller's share of it.
 */
export function bodyQuads(
  services: Services,
  req: Request,
  format: BodyFormat,
  base = services.objects.objectsPrefix,
): Promise<Quad[]> {
  const jsonLd = CallerBudget.jsonLdReader(req.res!, services.jsonLd);
  return parseBody(req.body as Buffer, format, { base, limits: services.config.limits, jsonLd });
}
