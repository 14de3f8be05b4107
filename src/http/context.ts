import type { ServerResponse } from 'node:http';
import type { Request } from 'express';
import type { Authorizer, Caller } from '../domain/access/authorizer.js';
import type { IdentityProvider } from '../auth/identity-provider.js';
import type { TokenVerifier } from '../auth/token-verifier.js';
import type { Config, Limits } from '../config.js';
import type { BodyRequest } from './body.js';
import { CallerBudget } from './caller-budget.js';
import type { Stage } from './stage.js';
import { parseBody, type BodyFormat } from '../rdf/parse.js';
import type { Quad } from '../rdf/terms.js';
import type { LogisticsEvents } from '../domain/events/logistics-events.js';
import type { LogisticsObjects } from '../domain/objects/logistics-objects.js';
import type { ActionRequests } from '../domain/requests/action-requests.js';
import type { ChangeRequests } from '../domain/requests/change-requests.js';
import type { AccessDelegations } from '../domain/requests/access-delegations.js';
import type { Grants } from '../domain/requests/grants.js';
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

/**
 * What the composition root built for the HTTP layer, created once and passed down: the app takes what
 * its pipeline uses and gives each router its own part (routes/api-routes.ts).
 */
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
  /** What reading a request's RDF body takes (limits, the JSON-LD worker, the default base). */
  bodyReading: BodyReading;
  moves: MovedObjects;
  holder: string;
  startedAt: Date;
  logger: Logger;
  lifecycle: Lifecycle;
  /** Present when `metrics.token` or `metrics.port` is set. */
  metrics?: ServerMetrics;
  /**
   * With several server processes over one store: resolves once this process has seen every commit
   * acknowledged before the call.
   */
  caughtUp?: () => Promise<void>;
}

const CALLER = Symbol('caller');
type WithCaller = ServerResponse & { [CALLER]?: Caller };

/**
 * The stage that finds a request's caller: its bearer token verified (at once when verified before),
 * the caller remembered for the route and the log line (which names a refused caller too) and let in
 * if its budget has room (caller-budget.ts), else 429.
 */
export function authenticate({
  verifier,
  access,
  callerBudget,
}: Pick<Services, 'verifier' | 'access' | 'callerBudget'>): Stage {
  const admit = (res: ServerResponse, agent: string): undefined => {
    const caller = access.caller(agent);
    (res as WithCaller)[CALLER] = caller;
    if (!callerBudget.enter(res, caller)) throw callerBudget.refusal();
    return undefined;
  };
  return (req, res) => {
    const agent = verifier.verify(req.headers.authorization);
    // A token verified before: no closure, no promise.
    if (typeof agent === 'string') return admit(res, agent);
    return agent.then((verified) => admit(res, verified));
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
export function requestUrl(baseUrl: string, req: Request): string {
  return `${baseUrl}${req.originalUrl}`;
}

/** What reading a request's RDF body takes; the routes that accept RDF get it. */
export interface BodyReading {
  limits: Limits;
  /** jsonld.js off the request thread, for bodies the fast JSON-LD reader leaves to it. */
  jsonLd: JsonLdFallback;
  /** The base IRIs in a body resolve against unless the route names another. */
  objectsPrefix: string;
}

/**
 * A request's body, read by `readBody`, as quads in `format` (decided by the route, which may check
 * other things first): IRIs resolved against `base`, the objects' by default, within the configured
 * limits, JSON-LD outside the fast path's subset on the worker, within the caller's share of it.
 */
export function bodyQuads(
  reading: BodyReading,
  req: BodyRequest,
  res: ServerResponse,
  format: BodyFormat,
  base = reading.objectsPrefix,
): Promise<Quad[]> {
  const jsonLd = CallerBudget.jsonLdReader(res, reading.jsonLd);
  return parseBody(req.body as Buffer, format, { base, limits: reading.limits, jsonLd });
}
