import { projectFile } from './project-files.js';
import { Authorizer } from './auth/authorizer.js';
import { GrantIndex } from './auth/grant-index.js';
import { AccessDelegations } from './domain/access-delegations.js';
import { Grants } from './domain/grants.js';
import { IdentityProvider } from './auth/identity-provider.js';
import { TokenVerifier } from './auth/token-verifier.js';
import { embeddedIssuer, holderIri, type Config } from './config.js';
import { EventIndex } from './domain/event-index.js';
import { LogisticsEvents } from './domain/logistics-events.js';
import { LogisticsObjects } from './domain/logistics-objects.js';
import { RevisionIndex } from './domain/revision-index.js';
import { createApp, createMetricsApp, createStartingApp } from './http/app.js';
import { Listener } from './http/listener.js';
import { Lifecycle } from './observability/health.js';
import type { ServerMetrics } from './observability/metrics.js';
import type { Services } from './http/context.js';
import { JsonLdFallback } from './rdf/jsonld-fallback.js';
import { CargoOntology } from './rdf/ontology.js';
import { DurableStore } from './store/durable-store.js';
import { ActionRequestIndex } from './domain/action-request-index.js';
import { ActionRequests } from './domain/action-requests.js';
import { ChangeRequests } from './domain/change-requests.js';
import { api } from './rdf/vocab.js';
import { canonicalLiterals } from './store/canonical-literals.js';
import { Analytics } from './domain/analytics.js';
import { MovedObjects } from './domain/moved-objects.js';
import { createLogger, messageLog, type Logger } from './observability/logger.js';
import { ShapeValidator } from './shapes/validator.js';

export const ONTOLOGY_FILE = projectFile('ontology/IATA-1R-DM-Ontology.ttl');

export interface RunningServer {
  url: string;
  services: Services;
  /** The separate metrics port's URL, when `metrics.port` is set. */
  metricsUrl?: string;
  store: DurableStore;
  /** Drains requests in flight (up to `shutdown.graceMs`), then flushes and closes the store. */
  close(): Promise<void>;
}

/**
 * Listens (answering health probes and 503 meanwhile), opens the store, rebuilds indexes, then
 * serves the API. Used by `npm start`, tests and benchmarks.
 */
export async function startServer(config: Config, logger: Logger = createLogger(config.logLevel)): Promise<RunningServer> {
  const lifecycle = new Lifecycle();
  const listener = await Listener.open(config.port, config.host, lifecycle, createStartingApp(lifecycle, logger));
  try {
    return await openAndServe(config, logger, lifecycle, listener);
  } catch (err) {
    await listener.drain(0);
    throw err;
  }
}

async function openAndServe(config: Config, logger: Logger, lifecycle: Lifecycle, listener: Listener): Promise<RunningServer> {
  const ontology = CargoOntology.fromFile(ONTOLOGY_FILE);
  let store: DurableStore | undefined;
  // Metrics are on once they can be reached; prom-client is only loaded then.
  const metrics: ServerMetrics | undefined =
    config.metrics.token !== undefined || config.metrics.port !== undefined
      ? new (await import('./observability/metrics.js')).ServerMetrics({ storeCapacity: () => store?.capacity() })
      : undefined;
  store = await DurableStore.open({
    dataDir: config.dataDir,
    fsync: config.journal.fsync,
    snapshotAfterBytes: config.journal.snapshotAfterBytes,
    capacityQuads: config.store.capacityQuads,
    memoryReserveBytes: config.store.memoryReserveBytes,
    log: messageLog(logger, 'store'),
    observer: metrics && {
      journalFlushed: (seconds, records) => {
        metrics.journalFlushSeconds.observe(seconds);
        metrics.journalBatchRecords.observe(records);
      },
      snapshotWritten: (seconds) => metrics.snapshotSeconds.observe(seconds),
    },
  });
  const durableStore = store;
  lifecycle.storeCapacity = () => durableStore.capacity();
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
  const index = new RevisionIndex();
  const eventIndex = new EventIndex();
  const requestIndex = new ActionRequestIndex();
  const shapes = config.validation.enabled ? ShapeValidator.fromFiles({ strict: config.validation.strict }) : undefined;
  const objects = new LogisticsObjects(store, index, ontology, access, config.baseUrl, shapes);
  const moves = new MovedObjects(store, objects, access);
  // The consumers of the after-commit stream; replaying what the store holds builds their state.
  for (const consumer of [index, objects, eventIndex, requestIndex, moves, grantIndex]) store.committed.subscribe((events) => consumer.onCommitted(events));
  store.publishStored();
  // Counted from here on: what this process commits, not what the store held at start.
  if (metrics) store.committed.subscribe(metrics.onCommitted);
  await objects.ensureDataHolder(holder, config.holderName);
  const events = new LogisticsEvents(store, eventIndex, objects, ontology, access);
  const actionRequests = new ActionRequests(store, requestIndex, access, config.baseUrl);
  const changeRequests = new ChangeRequests(store, access, objects, actionRequests, ontology, (literals) => canonicalLiterals(store, literals), config.decisionPolicy, holder);
  actionRequests.registerAcceptor(api.ChangeRequest, changeRequests);
  const grants = new Grants(store, grantIndex, access, objects, actionRequests, config.baseUrl);
  const accessDelegations = new AccessDelegations(access, objects, actionRequests, grants, config.decisionPolicy, holder);
  actionRequests.registerAcceptor(api.AccessDelegationRequest, accessDelegations);

  const queries = store.startQueryReplica({ timeBudgetMs: config.sparql.timeBudgetMillis, maxRows: config.sparql.maxRows, log: messageLog(logger, 'sparql') });
  const analytics = new Analytics(queries, access, index, eventIndex, requestIndex, config.sparql.openToPartners);

  const jsonLd = new JsonLdFallback(config.limits.jsonLdMillis);
  const services: Services = { config, access, verifier, identityProvider, objects, events, moves, actionRequests, changeRequests, accessDelegations, grants, analytics, jsonLd, holder, startedAt: new Date(), logger, lifecycle, metrics };
  const metricsListener =
    metrics && config.metrics.port !== undefined ? await Listener.open(config.metrics.port, config.metrics.host, lifecycle, createMetricsApp(metrics, lifecycle, logger)) : undefined;
  listener.serve(createApp(services));
  lifecycle.phase = 'ready';
  const durable = store;
  return {
    url: listener.url,
    metricsUrl: metricsListener?.url,
    services,
    store: durable,
    async close() {
      await listener.drain(config.shutdown.graceMs);
      await jsonLd.close();
      await durable.close();
      await metricsListener?.drain(0);
    },
  };
}
