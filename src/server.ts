import { mkdir } from 'node:fs/promises';
import { projectFile } from './project-files.js';
import { Authorizer } from './domain/access/authorizer.js';
import { GrantIndex } from './domain/access/grant-index.js';
import { AccessDelegations } from './domain/access/access-delegations.js';
import { Grants } from './domain/access/grants.js';
import { IdentityProvider } from './auth/identity-provider.js';
import { TokenVerifier } from './auth/token-verifier.js';
import { embeddedIssuer, holderIri, type Config } from './config.js';
import { EventIndex } from './domain/events/event-index.js';
import { LogisticsEvents } from './domain/events/logistics-events.js';
import { LogisticsObjects } from './domain/objects/logistics-objects.js';
import { RevisionIndex } from './domain/objects/revision-index.js';
import { createApp, createMetricsApp, createStartingApp } from './http/app.js';
import { Listener } from './http/listener.js';
import { Lifecycle } from './observability/health.js';
import type { ServerMetrics } from './observability/metrics.js';
import type { Services } from './http/context.js';
import { CallerBudget } from './http/caller-budget.js';
import { JsonLdFallback } from './rdf/jsonld-fallback.js';
import { CargoOntology } from './rdf/ontology.js';
import { ApiOntology } from './rdf/api-ontology.js';
import { ReceivedNotifications } from './domain/pubsub/received-notifications.js';
import { WebhookForwarder } from './domain/pubsub/webhook-forwarder.js';
import { OutboundClient } from './outbound/http-client.js';
import { clientCredentialsTokens, embeddedTokens, type TokenSource } from './outbound/tokens.js';
import { Outbox } from './domain/pubsub/outbox.js';
import { notifyingWriter } from './domain/pubsub/notifying-writer.js';
import { DeadLetters } from './domain/pubsub/dead-letters.js';
import { Delivery } from './domain/pubsub/delivery.js';
import { LeasedDelivery } from './domain/pubsub/leased-delivery.js';
import { storedOutboxEvents } from './store/schema/stored-events.js';
import { SubscriptionIndex, Subscriptions } from './domain/pubsub/subscriptions.js';
import { RemoteSubscriptions } from './domain/pubsub/remote-subscriptions.js';
import { PartnerOffers } from './domain/pubsub/partner-offers.js';
import { DurableStore } from './store/embedded/durable-store.js';
import { EngineQueries } from './store/sparql-engine/engine-queries.js';
import { SparqlClient } from './store/sparql-engine/sparql-client.js';
import { SparqlEngineStore } from './store/sparql-engine/sparql-engine-store.js';
import type { GraphStore } from './store/graph-store.js';
import { StoreUnavailableError } from './store/errors.js';
import type { QueryService } from './store/query-service.js';
import type { StoreCapacity } from './store/capacity.js';
import { ActionRequestIndex } from './domain/requests/action-request-index.js';
import { ActionRequests } from './domain/requests/action-requests.js';
import { ChangeRequests } from './domain/requests/change-requests.js';
import { api } from './rdf/vocab.js';
import { Analytics } from './domain/analytics/analytics.js';
import { MovedObjects } from './domain/moves/moved-objects.js';
import { createLogger, messageLog, type Logger } from './observability/logger.js';
import { ShapeValidator } from './shapes/validator.js';

export const ONTOLOGY_FILE = projectFile('ontology/IATA-1R-DM-Ontology.ttl');
export const API_ONTOLOGY_FILE = projectFile('ontology/ONE-Record-API-Ontology.ttl');

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

/** The token outbound calls carry: from the configured provider (client credentials), else signed by the embedded one. */
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

/** The store as the composition root uses it: the domain's seam, plus starting and stopping. */
export type ServerStore = GraphStore & { publishStored(): Promise<void>; close(): Promise<void> };

interface OpenedStore {
  store: ServerStore;
  /** How full the store is (the embedded store's limits; an engine has its own). */
  capacity(): StoreCapacity | undefined;
  /** The SPARQL analytics service over it. */
  startQueries(): QueryService;
  embedded?: DurableStore;
  /** With other processes on the same engine: see Services.caughtUp. */
  caughtUp?: () => Promise<void>;
  /** A lease among the processes on the same engine. */
  lease?: SparqlEngineStore['lease'];
  /** Resolves once every commit of the other processes on the engine made before the call is published here. */
  othersCaughtUp?: () => Promise<void>;
}

/** Connections to the engine for SPARQL analytics at most; queries beyond wait for one. */
const ANALYTICS_CONNECTIONS = 4;

/** Opens the configured backend (`store.backend`). */
async function openStore(config: Config, logger: Logger, metrics: ServerMetrics | undefined): Promise<OpenedStore> {
  if (config.store.backend === 'sparql') {
    const {
      queryUrl,
      updateUrl,
      user,
      password,
      authScheme,
      token,
      timeoutMs,
      sharedWriters,
      readYourWrites,
      feedPollMillis,
      feedGapWaitMillis,
      feedRetentionMinutes,
      processDeadAfterMillis,
    } = config.store.sparql;
    const auth =
      token !== undefined
        ? { token }
        : user !== undefined
          ? { user, password: password ?? '', scheme: authScheme }
          : undefined;
    const shared = sharedWriters
      ? {
          pollMs: feedPollMillis,
          gapWaitMs: feedGapWaitMillis,
          retentionMs: feedRetentionMinutes * 60_000,
          deadAfterMs: processDeadAfterMillis,
          log: messageLog(logger, 'store'),
          observeLag: metrics && ((seconds: number) => metrics.commitFeedLagSeconds.observe(seconds)),
        }
      : undefined;
    const store = new SparqlEngineStore(
      new SparqlClient({ queryUrl: queryUrl!, updateUrl: updateUrl!, auth, timeoutMs }),
      shared,
    );
    // The data directory then holds only the identity provider's key.
    await mkdir(config.dataDir, { recursive: true });
    const { maxRows, timeBudgetMillis } = config.sparql;
    // Analytics have connections of their own (a long query never holds one the API needs), and the engine stops a query past the budget itself.
    const analyticsClient = () =>
      new SparqlClient({
        queryUrl: queryUrl!,
        updateUrl: updateUrl!,
        auth,
        timeoutMs: timeBudgetMillis,
        connections: ANALYTICS_CONNECTIONS,
        engineTimeout: true,
      });
    return {
      store,
      caughtUp: shared && readYourWrites ? () => store.caughtUp() : undefined,
      lease: (name, options) => store.lease(name, options),
      othersCaughtUp: () => store.caughtUp(),
      capacity: () => undefined,
      startQueries: () =>
        new EngineQueries(analyticsClient(), {
          maxRows,
          timeBudgetMs: timeBudgetMillis,
          baseUrl: config.baseUrl,
          parallel: ANALYTICS_CONNECTIONS,
        }),
    };
  }
  const embedded = await DurableStore.open({
    dataDir: config.dataDir,
    fsync: config.journal.fsync,
    snapshotAfterBytes: config.journal.snapshotAfterBytes,
    maxReplayBytes: config.journal.maxReplayBytes,
    capacityQuads: config.store.capacityQuads,
    memoryReserveBytes: config.store.memoryReserveBytes,
    compactAfterDeletedQuads: config.store.compactAfterDeletedQuads,
    memoryImage: config.store.memoryImage,
    imageAtSnapshot: config.store.imageAtSnapshot,
    memoryImageMinQuads: config.store.memoryImageMinQuads,
    log: messageLog(logger, 'store'),
    observer: metrics && {
      journalFlushed: (seconds, records) => {
        metrics.journalFlushSeconds.observe(seconds);
        metrics.journalBatchRecords.observe(records);
      },
      snapshotWritten: (seconds) => metrics.snapshotSeconds.observe(seconds),
    },
  });
  return {
    store: embedded,
    embedded,
    capacity: () => embedded.capacity(),
    startQueries: () =>
      embedded.startQueryReplica({
        timeBudgetMs: config.sparql.timeBudgetMillis,
        maxRows: config.sparql.maxRows,
        freshnessWaitMs: config.sparql.freshnessWaitMillis,
        historyMaxQuads: config.sparql.historyMaxQuads,
        memoryLimitBytes: config.sparql.memoryLimitBytes,
        idleMs: config.sparql.replicaIdleMillis,
        observeVisible: metrics && ((seconds) => metrics.sparqlReplicaVisibleSeconds.observe(seconds)),
        observeWorkers: metrics && ((workers) => metrics.sparqlReplicaWorkers.set(workers)),
        log: messageLog(logger, 'sparql'),
      }),
  };
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
        // An engine started after the server, or restarting (it died while the start read it): the start is tried again.
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

/**
 * What the files under ontology/ and shapes/ give, read once per process: they never change while
 * it runs, and a process that starts several servers (the tests) would otherwise parse and compile
 * them again for each (~140 ms a server).
 */
const readOnce = <T extends object>(make: () => T): (() => T) => {
  let made: T | undefined;
  return () => (made ??= make());
};
const cargoOntology = readOnce(() => CargoOntology.fromFile(ONTOLOGY_FILE));
const apiOntology = readOnce(() => ApiOntology.fromFile(API_ONTOLOGY_FILE));
const shapeValidators = {
  strict: readOnce(() => ShapeValidator.fromFiles({ strict: true })),
  lenient: readOnce(() => ShapeValidator.fromFiles()),
};

async function openAndServe(
  config: Config,
  logger: Logger,
  lifecycle: Lifecycle,
  listener: Listener,
  opening: Opening,
): Promise<RunningServer> {
  const ontology = cargoOntology();
  let opened: OpenedStore | undefined;
  let delivery: LeasedDelivery | undefined;
  // Metrics are on once they can be reached; prom-client is only loaded then.
  const metrics: ServerMetrics | undefined =
    config.metrics.token !== undefined || config.metrics.port !== undefined
      ? new (await import('./observability/metrics.js')).ServerMetrics({
          storeCapacity: () => opened?.capacity(),
          outboxDepth: () => delivery?.depth(),
        })
      : undefined;
  opened = await openStore(config, logger, metrics);
  const { store } = opened;
  opening.store = store;
  const capacity = opened.capacity;
  if (opened.embedded) lifecycle.storeCapacity = () => capacity()!;
  const holder = holderIri(config);
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
  const grantIndex = new GrantIndex();
  const access = new Authorizer(new Set([holder, ...config.internalAgents]), config.hideForbidden, grantIndex);
  const index = new RevisionIndex((object, number) => store.revision(object, number));
  const eventIndex = new EventIndex();
  const requestIndex = new ActionRequestIndex();
  const shapes = config.validation.enabled
    ? shapeValidators[config.validation.strict ? 'strict' : 'lenient']()
    : undefined;
  // Writers commit through the outbox's numbering: each commit queues the notifications it causes.
  const subscriptionIndex = new SubscriptionIndex(ontology, index, access, config.delivery.callbacks);
  const outbox = new Outbox(subscriptionIndex, index, config.baseUrl, holder);
  const writes = notifyingWriter(store, outbox);
  const objects = new LogisticsObjects(store, writes, index, ontology, access, config.baseUrl, shapes);
  const moves = new MovedObjects(store, objects, access);
  const receivedNotifications = await ReceivedNotifications.open(store, apiOntology(), access, (triples) =>
    objects.shapeViolations(triples),
  );
  const events = new LogisticsEvents(store, writes, eventIndex, objects, ontology, access);
  const actionRequests = new ActionRequests(store, writes, requestIndex, access, config.baseUrl);
  const changeRequests = new ChangeRequests(
    store,
    writes.claims,
    access,
    objects,
    actionRequests,
    ontology,
    config.decisionPolicy,
    holder,
  );
  actionRequests.registerAcceptor(api.ChangeRequest, changeRequests);
  const outbound = new OutboundClient({ ...config.outbound, ownOrigin: new URL(config.baseUrl).origin });
  const subscriptions = new Subscriptions(subscriptionIndex, actionRequests, {
    policy: config.decisionPolicy,
    holder,
    refuseCallback: (url) => outbound.refusal(url),
    shapeViolations: (triples) => objects.shapeViolations(triples),
  });
  actionRequests.registerAcceptor(api.SubscriptionRequest, subscriptions);
  const tokens = outboundTokens(config, identityProvider, holder);
  const log = messageLog(logger, 'notifications');
  const sharedEngine = config.store.backend === 'sparql' && config.store.sparql.sharedWriters;
  const deliverer = () =>
    new Delivery(
      store,
      subscriptions,
      (revision) => objects.triples(revision),
      outbound,
      tokens,
      config.delivery,
      log,
      metrics?.deliveryOutcome,
      () => lifecycle.serving(),
      {
        inFlight: outbox.inFlight,
        // Another process may be writing a number this one has not seen.
        othersWaitMs: sharedEngine ? config.store.sparql.outboxGapWaitMillis : 0,
        // A killed process's write under way is completed once the others take it for dead (within 1.5 times that).
        awaitedMs: sharedEngine ? 3 * config.store.sparql.processDeadAfterMillis : 0,
      },
    );
  const lease = sharedEngine
    ? opened.lease?.('notification-delivery', { termMs: config.store.sparql.deliveryLeaseMillis, log })
    : undefined;
  delivery = new LeasedDelivery(
    deliverer,
    lease,
    () => storedOutboxEvents(store),
    () => opened.othersCaughtUp?.() ?? Promise.resolve(),
    log,
  );
  const deadLetters = new DeadLetters(store);
  const remoteSubscriptions = new RemoteSubscriptions(store, ontology, access, outbound, tokens, holder);
  // The consumers of the after-commit stream; replaying what the store holds builds their state.
  for (const consumer of [
    index,
    objects,
    eventIndex,
    requestIndex,
    moves,
    grantIndex,
    subscriptionIndex,
    outbox,
    remoteSubscriptions,
  ]) {
    store.committed.subscribe((events) => consumer.onCommitted(events));
  }
  // Every process's notifications, delivered by the process holding the lease (docs/sparql-engine.md, "Several processes").
  store.committed.subscribe((events) => delivery!.onCommitted(events));
  await store.publishStored();
  // Counted from here on: what this process commits, not what the store held at start.
  if (metrics) store.committed.subscribe(metrics.onCommitted, false);
  if (config.notifications.webhookUrl) {
    // Operator-configured and usually on a private network: the address guard does not apply.
    const webhook = new WebhookForwarder(
      config.notifications.webhookUrl,
      new OutboundClient({ ...config.outbound, allowPrivateAddresses: true }),
      receivedNotifications,
      log,
    );
    store.committed.subscribe((events) => webhook.onCommitted(events), false);
  }
  await objects.ensureDataHolder(holder, config.holderName);
  const grants = new Grants(writes.claims, grantIndex, access, objects, actionRequests, config.baseUrl);
  const accessDelegations = new AccessDelegations(
    access,
    objects,
    actionRequests,
    grants,
    config.decisionPolicy,
    holder,
  );
  actionRequests.registerAcceptor(api.AccessDelegationRequest, accessDelegations);
  if (config.partners.length > 0) {
    const offers = new PartnerOffers(
      config.partners,
      subscriptions,
      ontology,
      outbound,
      tokens,
      access.caller(holder),
      config.limits,
      log,
    );
    store.committed.subscribe((events) => offers.onCommitted(events), false);
  }
  delivery.start();
  opening.delivery = delivery;
  if (config.notifications.retentionDays > 0) receivedNotifications.keepFor(config.notifications.retentionDays, log);

  const queries = opened.startQueries();
  const analytics = new Analytics(
    queries,
    access,
    index,
    eventIndex,
    requestIndex,
    config.sparql,
    metrics?.queryFinished,
  );

  const jsonLd = new JsonLdFallback(config.limits.jsonLdMillis);
  const services: Services = {
    config,
    access,
    verifier,
    identityProvider,
    objects,
    events,
    moves,
    actionRequests,
    changeRequests,
    accessDelegations,
    grants,
    analytics,
    receivedNotifications,
    subscriptions,
    delivery,
    deadLetters,
    remoteSubscriptions,
    ontology,
    jsonLd,
    callerBudget: new CallerBudget(config.limits.perCaller),
    holder,
    startedAt: new Date(),
    logger,
    lifecycle,
    metrics,
    caughtUp: opened.caughtUp,
  };
  const metricsListener =
    metrics && config.metrics.port !== undefined
      ? await Listener.open(
          config.metrics.port,
          config.metrics.host,
          lifecycle,
          createMetricsApp(metrics, lifecycle, logger),
          config.keepAliveTimeoutMs,
        )
      : undefined;
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
      await receivedNotifications.stop();
      await jsonLd.close();
      await store.close();
      await metricsListener?.drain(0);
    },
  };
}
