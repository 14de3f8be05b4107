import { IdentityProvider } from './auth/identity-provider.js';
import { TokenVerifier } from './auth/token-verifier.js';
import { embeddedIssuer, holderIri, type Config } from './config.js';
import { Analytics } from './domain/analytics/analytics.js';
import { DeadLetters } from './domain/pubsub/dead-letters.js';
import type { LeasedDelivery } from './domain/pubsub/leased-delivery.js';
import { createApp, createMetricsApp, createStartingApp } from './http/app.js';
import { CallerBudget } from './http/caller-budget.js';
import type { Services } from './http/context.js';
import { Listener } from './http/listener.js';
import { Lifecycle } from './observability/health.js';
import { createLogger, messageLog, type Logger } from './observability/logger.js';
import type { MetricSources, ServerMetrics } from './observability/metrics.js';
import { OutboundClient } from './outbound/http-client.js';
import { clientCredentialsTokens, embeddedTokens, type TokenSource } from './outbound/tokens.js';
import { JsonLdFallback } from './rdf/jsonld-fallback.js';
import { buildDomain, type Domain } from './server/domain.js';
import {
  forwardToWebhook,
  notificationDelivery,
  offerToPartners,
  type NotificationParts,
} from './server/notifications.js';
import { openStore, type OpenedStore, type ServerStore } from './server/open-store.js';
import type { DurableStore } from './store/embedded/durable-store.js';
import { StoreUnavailableError } from './store/errors.js';

export interface RunningServer {
  url: string;
  services: Services;
  /** The separate metrics port's URL, when `metrics.port` is set. */
  metricsUrl?: string;
  store: ServerStore;
  /** The embedded store, when it is the backend (store.backend: embedded). */
  embedded?: DurableStore;
  /** Drains requests in flight (up to `shutdown.graceMs`), then flushes and closes the store. */
  close(): Promise<void>;
}

/**
 * The token outbound calls carry: from the configured provider (client credentials), else signed by
 * the embedded one.
 */
function outboundTokens(config: Config, idp: IdentityProvider | undefined, holder: string): TokenSource | undefined {
  const credentials = config.outbound.clientCredentials;
  // The provider is the operator's choice and may be on a private network.
  if (credentials)
    return clientCredentialsTokens(
      new OutboundClient({ ...config.outbound, allowPrivateAddresses: true }),
      credentials,
    );
  return idp && embeddedTokens(idp, holder, config.identityProvider.tokenLifetimeSeconds);
}

/**
 * Listens (answering health probes and 503 meanwhile), opens the store, rebuilds indexes, then
 * serves the API. Used by `npm start`, tests and benchmarks.
 */
export async function startServer(
  config: Config,
  logger: Logger = createLogger(config.logLevel),
): Promise<RunningServer> {
  const lifecycle = new Lifecycle();
  const starting = createStartingApp(lifecycle, logger, config.http.cors.allowedOrigins);
  const listener = await Listener.open(config.port, config.host, lifecycle, starting, config.keepAliveTimeoutMs);
  try {
    for (let attempt = 1; ; attempt++) {
      const opening: Opening = {};
      try {
        return await openAndServe(config, logger, lifecycle, listener, opening);
      } catch (err) {
        // An engine started after the server, or restarting (it died while the start read it): the
        // start is tried again.
        if (!(err instanceof StoreUnavailableError) || config.store.backend !== 'sparql') throw err;
        await opening.delivery?.stop().catch(() => {});
        await opening.store?.close();
        const waitMs = Math.min(attempt, START_RETRY_MAX_STEPS) * START_RETRY_STEP_MS;
        logger.warn(
          { event: 'store-unavailable-at-start', err },
          `the SPARQL engine cannot be read: starting again in ${waitMs / 1000} s`,
        );
        await new Promise((resolve) => setTimeout(resolve, waitMs));
      }
    }
  } catch (err) {
    await listener.drain(0);
    throw err;
  }
}

/** A start that found the engine unavailable is tried again after 1 s, 2 s, ... up to 10 s, for as long as it takes. */
const START_RETRY_STEP_MS = 1000;
const START_RETRY_MAX_STEPS = 10;

/** What a start opened and started that a failed start closes and stops. */
interface Opening {
  store?: ServerStore;
  delivery?: LeasedDelivery;
}

/** Metrics are on once they can be reached; prom-client is only loaded then. */
async function serverMetrics(config: Config, sources: MetricSources): Promise<ServerMetrics | undefined> {
  if (config.metrics.token === undefined && config.metrics.port === undefined) return undefined;
  return new (await import('./observability/metrics.js')).ServerMetrics(sources);
}

/** The embedded identity provider, when enabled, and the verifier of bearer tokens (which trusts it). */
async function authentication(config: Config, holder: string) {
  const identityProvider = config.identityProvider.enabled
    ? await IdentityProvider.open({
        dataDir: config.dataDir,
        issuer: embeddedIssuer(config),
        holder,
        clients: config.identityProvider.clients,
        lifetimeSeconds: config.identityProvider.tokenLifetimeSeconds,
      })
    : undefined;
  const verifier = new TokenVerifier(
    config.trustedIssuers,
    config.cache.verifiedTokens,
    identityProvider && { issuer: identityProvider.issuer, jwk: identityProvider.publicJwk },
    { timeoutMs: config.outbound.timeoutMs, refetchSeconds: config.outbound.keySetRefetchSeconds },
  );
  return { identityProvider, verifier };
}

/**
 * Feeds the domain's consumers and the delivery from the after-commit stream, then publishes what
 * the store holds, which builds their state; metrics count what this process commits from then on.
 */
async function publishStored(
  store: ServerStore,
  domain: Domain,
  delivery: LeasedDelivery,
  metrics: ServerMetrics | undefined,
): Promise<void> {
  for (const consumer of domain.consumers) store.committed.subscribe((events) => consumer.onCommitted(events));
  // Every process's notifications, delivered by the process holding the lease (docs/sparql-engine.md,
  // "Several processes").
  store.committed.subscribe((events) => delivery.onCommitted(events));
  await store.publishStored();
  if (metrics) store.committed.subscribe(metrics.onCommitted, false);
}

/** What a start has running once the store's data is published: the domain and what serves it. */
interface Started {
  opened: OpenedStore;
  metrics: ServerMetrics | undefined;
  holder: string;
  identityProvider: IdentityProvider | undefined;
  verifier: TokenVerifier;
  /** Every outbound call but those to the configured identity provider and webhook. */
  outbound: OutboundClient;
  domain: Domain;
  delivery: LeasedDelivery;
}

/**
 * Opens the store, builds the domain over it, publishes what the store holds and starts the
 * notification machinery; `opening` learns what to close should the start fail.
 */
async function openDomain(config: Config, logger: Logger, lifecycle: Lifecycle, opening: Opening): Promise<Started> {
  let opened: OpenedStore | undefined;
  let delivery: LeasedDelivery | undefined;
  const metrics = await serverMetrics(config, {
    storeCapacity: () => opened?.capacity(),
    outboxDepth: () => delivery?.depth(),
  });
  opened = await openStore(config, logger, metrics);
  const { store, capacity } = opened;
  opening.store = store;
  if (opened.embedded) lifecycle.storeCapacity = () => capacity()!;
  const holder = holderIri(config);
  const { identityProvider, verifier } = await authentication(config, holder);
  const outbound = new OutboundClient({ ...config.outbound, ownOrigin: new URL(config.baseUrl).origin });
  const tokens = outboundTokens(config, identityProvider, holder);
  const domain = await buildDomain(config, store, { holder, outbound, tokens });
  const log = messageLog(logger, 'notifications');
  const notifying: NotificationParts = { config, opened, domain, outbound, tokens, holder, log, metrics, lifecycle };
  delivery = notificationDelivery(notifying);
  await publishStored(store, domain, delivery, metrics);
  forwardToWebhook(notifying);
  await domain.objects.ensureDataHolder(holder, config.holderName);
  // Requests an earlier start kept hot with a final status leave memory for the store (docs/storage.md).
  const finished = await domain.actionRequests.finishStored();
  if (finished > 0)
    messageLog(logger, 'store')(`action requests: ${finished} with a final status moved out of memory to the store`);
  offerToPartners(notifying);
  delivery.start();
  opening.delivery = delivery;
  const { retentionDays } = config.notifications;
  if (retentionDays > 0) domain.receivedNotifications.keepFor(retentionDays, log);
  return { opened, metrics, holder, identityProvider, verifier, outbound, domain, delivery };
}

/** The services the HTTP layer takes: the domain's, SPARQL analytics and the request pipeline's parts. */
function httpServices(
  config: Config,
  started: Started,
  parts: Pick<Services, 'analytics' | 'logger' | 'lifecycle'> & { jsonLd: JsonLdFallback },
): Services {
  const { opened, domain, holder, identityProvider, verifier, metrics, delivery } = started;
  return {
    config,
    access: domain.access,
    verifier,
    identityProvider,
    objects: domain.objects,
    events: domain.events,
    moves: domain.moves,
    actionRequests: domain.actionRequests,
    changeRequests: domain.changeRequests,
    accessDelegations: domain.accessDelegations,
    grants: domain.grants,
    analytics: parts.analytics,
    receivedNotifications: domain.receivedNotifications,
    subscriptions: domain.subscriptions,
    delivery,
    deadLetters: new DeadLetters(opened.store),
    remoteSubscriptions: domain.remoteSubscriptions,
    ontology: domain.ontology,
    bodyReading: { limits: config.limits, jsonLd: parts.jsonLd, objectsPrefix: domain.objects.objectsPrefix },
    callerBudget: new CallerBudget(config.limits.perCaller),
    holder,
    startedAt: new Date(),
    logger: parts.logger,
    lifecycle: parts.lifecycle,
    metrics,
    caughtUp: opened.caughtUp,
  };
}

async function openAndServe(
  config: Config,
  logger: Logger,
  lifecycle: Lifecycle,
  listener: Listener,
  opening: Opening,
): Promise<RunningServer> {
  const started = await openDomain(config, logger, lifecycle, opening);
  const { opened, metrics, domain, delivery, outbound } = started;
  const { store } = opened;
  const { access, index, eventIndex, actionRequests } = domain;
  const queries = opened.startQueries();
  const analytics = new Analytics(
    queries,
    access,
    index,
    eventIndex,
    actionRequests,
    config.sparql,
    metrics?.queryFinished,
  );
  const jsonLd = new JsonLdFallback(config.limits.jsonLdMillis);
  const services = httpServices(config, started, { analytics, logger, lifecycle, jsonLd });
  const metricsListener = await openMetricsListener(config, metrics, lifecycle, logger);
  listener.serve(createApp(services));
  lifecycle.phase = 'ready';
  return {
    url: listener.url,
    metricsUrl: metricsListener?.url,
    services,
    store,
    embedded: opened.embedded,
    async close() {
      await delivery.stop();
      await outbound.close();
      await listener.drain(config.shutdown.graceMs);
      await domain.receivedNotifications.stop();
      await jsonLd.close();
      await store.close();
      await metricsListener?.drain(0);
    },
  };
}

/** The separate metrics port, when `metrics.port` is set. */
async function openMetricsListener(
  config: Config,
  metrics: ServerMetrics | undefined,
  lifecycle: Lifecycle,
  logger: Logger,
): Promise<Listener | undefined> {
  if (!metrics || config.metrics.port === undefined) return undefined;
  const app = createMetricsApp(metrics, lifecycle, logger);
  return Listener.open(config.metrics.port, config.metrics.host, lifecycle, app, config.keepAliveTimeoutMs);
}
