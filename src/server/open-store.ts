import { mkdir } from 'node:fs/promises';
import type { Config } from '../config.js';
import { messageLog, type Logger } from '../observability/logger.js';
import type { ServerMetrics } from '../observability/metrics.js';
import type { StoreCapacity } from '../store/capacity.js';
import { DurableStore } from '../store/embedded/durable-store.js';
import type { GraphStore } from '../store/graph-store.js';
import type { QueryService } from '../store/query-service.js';
import { EngineQueries } from '../store/sparql-engine/engine-queries.js';
import { SparqlClient } from '../store/sparql-engine/sparql-client.js';
import { SparqlEngineStore } from '../store/sparql-engine/sparql-engine-store.js';

/** The store as the composition root uses it: the domain's seam, plus starting and stopping. */
export type ServerStore = GraphStore & { publishStored(): Promise<void>; close(): Promise<void> };

export interface OpenedStore {
  store: ServerStore;
  /** How full the store is (the embedded store's limits; an engine has its own). */
  capacity(): StoreCapacity | undefined;
  /** The SPARQL analytics service over it. */
  startQueries(): QueryService;
  embedded?: DurableStore;
  /** With other processes on the same engine: see Services.caughtUp. */
  caughtUp?: () => Promise<void>;
  /** Leases the processes on the same engine share out. */
  leases?: SparqlEngineStore['leases'];
  /**
   * Resolves once every commit of the other processes on the engine made before the call is
   * published here.
   */
  othersCaughtUp?: () => Promise<void>;
}

/** Connections to the engine for SPARQL analytics at most; queries beyond wait for one. */
const ANALYTICS_CONNECTIONS = 4;

/** Opens the configured backend (`store.backend`). */
export function openStore(config: Config, logger: Logger, metrics: ServerMetrics | undefined): Promise<OpenedStore> {
  return config.store.backend === 'sparql'
    ? openEngineStore(config, logger, metrics)
    : openEmbeddedStore(config, logger, metrics);
}

type EngineSettings = Config['store']['sparql'];

function engineAuth({ user, password, authScheme, token }: EngineSettings) {
  if (token !== undefined) return { token };
  return user === undefined ? undefined : { user, password: password ?? '', scheme: authScheme };
}

/** With `store.sparql.sharedWriters`: how this process follows the others' commits on the engine. */
function sharedWriting(settings: EngineSettings, logger: Logger, metrics: ServerMetrics | undefined) {
  if (!settings.sharedWriters) return undefined;
  return {
    pollMs: settings.feedPollMillis,
    gapWaitMs: settings.feedGapWaitMillis,
    retentionMs: settings.feedRetentionMinutes * 60_000,
    deadAfterMs: settings.processDeadAfterMillis,
    log: messageLog(logger, 'store'),
    observeLag: metrics && ((seconds: number) => metrics.commitFeedLagSeconds.observe(seconds)),
  };
}

async function openEngineStore(
  config: Config,
  logger: Logger,
  metrics: ServerMetrics | undefined,
): Promise<OpenedStore> {
  const settings = config.store.sparql;
  const urls = { queryUrl: settings.queryUrl!, updateUrl: settings.updateUrl! };
  const auth = engineAuth(settings);
  const shared = sharedWriting(settings, logger, metrics);
  const store = new SparqlEngineStore(new SparqlClient({ ...urls, auth, timeoutMs: settings.timeoutMs }), shared);
  // The data directory then holds only the identity provider's key.
  await mkdir(config.dataDir, { recursive: true });
  const { maxRows, timeBudgetMillis } = config.sparql;
  // Analytics have connections of their own (a long query never holds one the API needs), and the
  // engine stops a query past the budget itself.
  const analyticsClient = () =>
    new SparqlClient({
      ...urls,
      auth,
      timeoutMs: timeBudgetMillis,
      connections: ANALYTICS_CONNECTIONS,
      engineTimeout: true,
    });
  return {
    store,
    caughtUp: shared && settings.readYourWrites ? () => store.caughtUp() : undefined,
    leases: (name, count, options) => store.leases(name, count, options),
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

async function openEmbeddedStore(
  config: Config,
  logger: Logger,
  metrics: ServerMetrics | undefined,
): Promise<OpenedStore> {
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
  const { sparql } = config;
  return {
    store: embedded,
    embedded,
    capacity: () => embedded.capacity(),
    startQueries: () =>
      embedded.startQueryReplica({
        timeBudgetMs: sparql.timeBudgetMillis,
        maxRows: sparql.maxRows,
        freshnessWaitMs: sparql.freshnessWaitMillis,
        historyMaxQuads: sparql.historyMaxQuads,
        memoryLimitBytes: sparql.memoryLimitBytes,
        idleMs: sparql.replicaIdleMillis,
        observeVisible: metrics && ((seconds) => metrics.sparqlReplicaVisibleSeconds.observe(seconds)),
        observeWorkers: metrics && ((workers) => metrics.sparqlReplicaWorkers.set(workers)),
        log: messageLog(logger, 'sparql'),
      }),
  };
}
