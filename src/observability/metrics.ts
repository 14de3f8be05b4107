import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { FinishedQuery } from '../domain/analytics/analytics.js';
import type { DeliveryOutcome, OutboxDepth } from '../domain/pubsub/delivery.js';
import type { StoreCapacity } from '../store/capacity.js';
import type { DomainEvent } from '../store/transaction.js';
import type { RequestObserver } from './request-log.js';

/** What the metrics read from the running server when scraped. */
export interface MetricSources {
  /** How full the store is (undefined until it is open). */
  storeCapacity(): StoreCapacity | undefined;
  /** What the notification outbox holds (undefined until delivery runs). */
  outboxDepth(): OutboxDepth | undefined;
}

/** `REQUEST_ACCEPTED` for `https://onerecord.iata.org/ns/api#REQUEST_ACCEPTED`: short, bounded label values. */
const localName = (iri: string) => iri.slice(Math.max(iri.lastIndexOf('#'), iri.lastIndexOf('/')) + 1);

const SECONDS_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

type Registers = Registry[];

/** Every HTTP request's latency, by route pattern: fed by the request observer. */
function requestHistogram(registers: Registers) {
  return new Histogram({
    name: 'onerecord_http_request_duration_seconds',
    help: 'HTTP requests by method, route pattern and status: latency until the answer was sent',
    labelNames: ['method', 'route', 'status'],
    buckets: SECONDS_BUCKETS,
    registers,
  });
}

/** What the store's observer feeds: journal group commits, snapshots, the commit feed of shared writers. */
function storeHistograms(registers: Registers) {
  return {
    journalFlushSeconds: new Histogram({
      name: 'onerecord_journal_fsync_seconds',
      help: 'Journal group commits: time to write and fdatasync one batch',
      buckets: SECONDS_BUCKETS,
      registers,
    }),
    journalBatchRecords: new Histogram({
      name: 'onerecord_journal_batch_records',
      help: 'Journal group commits: records written by one write + fdatasync',
      buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512],
      registers,
    }),
    snapshotSeconds: new Histogram({
      name: 'onerecord_snapshot_duration_seconds',
      help: 'Snapshots: time to write one (rotate, dump, fsync, rename)',
      buckets: [0.01, 0.1, 0.5, 1, 5, 10, 30, 60, 120, 300],
      registers,
    }),
    commitFeedLagSeconds: new Histogram({
      name: 'onerecord_commit_feed_lag_seconds',
      help:
        "With several processes on one engine (store.sparql.sharedWriters): other processes' commits by " +
        "the time from when they were made (their process's clock) until this process published them to its " +
        'indexes',
      buckets: SECONDS_BUCKETS,
      registers,
    }),
  };
}

/** Counts of what this process committed (the after-commit stream) and of delivery attempts. */
function domainCounters(registers: Registers) {
  return {
    actionRequests: new Counter({
      name: 'onerecord_action_requests_total',
      help:
        'Action requests (ChangeRequest, ...) by the status they reached: REQUEST_PENDING when created, ' +
        'then REQUEST_ACCEPTED, REQUEST_REJECTED, REQUEST_FAILED or REQUEST_REVOKED',
      labelNames: ['type', 'status'],
      registers,
    }),
    logisticsEvents: new Counter({
      name: 'onerecord_logistics_events_total',
      help: 'Logistics Events stored (each event of a bulk request counts)',
      registers,
    }),
    notificationsQueued: new Counter({
      name: 'onerecord_notifications_queued_total',
      help: 'Notifications put in the outbox (one per recipient a write notifies)',
      registers,
    }),
    notificationsReceived: new Counter({
      name: 'onerecord_notifications_received_total',
      help: 'Notifications received on POST /notifications and stored (duplicates not counted)',
      registers,
    }),
    deliveries: new Counter({
      name: 'onerecord_notification_deliveries_total',
      help:
        'Attempts to deliver a notification by outcome: delivered (2xx), failed (retried later), dropped ' +
        '(subscription ended or object no longer readable), dead_lettered',
      labelNames: ['outcome'],
      registers,
    }),
  };
}

/** SPARQL queries, and the query replica that the writes feed. */
function sparqlMetrics(registers: Registers) {
  return {
    queries: new Histogram({
      name: 'onerecord_sparql_query_duration_seconds',
      help:
        'SPARQL queries run by view (latest, revisions, events, audit) and outcome (answered, truncated ' +
        'at the row cap, timed_out, unavailable, failed): time from handing the query to the query replica, ' +
        'including any wait for it to catch up, until its answer or error',
      labelNames: ['view', 'outcome'],
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers,
    }),
    replicaVisibleSeconds: new Histogram({
      name: 'onerecord_sparql_replica_visible_seconds',
      help:
        'Writes by the time from their commit (applied to the store, answered right after) until the ' +
        'SPARQL query replica had applied them too, so that a query sees them',
      buckets: SECONDS_BUCKETS,
      registers,
    }),
    replicaWorkers: new Gauge({
      name: 'onerecord_sparql_replica_workers',
      help:
        'Worker threads holding a SPARQL query replica that the writes feed: 0 while it is stopped (no ' +
        'query for sparql.replicaIdleMillis; the next query starts it), 1, 2 while a successor copies the ' +
        'store to take over',
      registers,
    }),
  };
}

/** A gauge set when scraped from what `read` finds (nothing until its source exists). */
const gaugeOf =
  <T>(registers: Registers, read: () => T | undefined) =>
  (name: string, help: string, value: (found: T) => number) =>
    new Gauge({
      name,
      help,
      registers,
      collect() {
        const found = read();
        if (found !== undefined) this.set(value(found));
      },
    });

/** What the notification outbox holds, read when scraped. */
function outboxGauges(registers: Registers, sources: MetricSources): void {
  const outboxGauge = gaugeOf(registers, () => sources.outboxDepth());
  outboxGauge(
    'onerecord_outbox_notifications',
    'Notifications in the outbox still to deliver (dead letters not included)',
    (d) => d.pending,
  );
  outboxGauge(
    'onerecord_outbox_queues',
    'Delivery queues (one per subscriber and topic) with notifications still to deliver',
    (d) => d.queues,
  );
  outboxGauge(
    'onerecord_outbox_dead_letters',
    'Notifications given up on and kept as dead letters (replayable through /internal/outbox/dead-letters/replay)',
    (d) => d.deadLetters,
  );
}

/** How full the store is, read when scraped. */
function storeGauges(registers: Registers, sources: MetricSources): void {
  const storeGauge = gaugeOf(registers, () => sources.storeCapacity());
  storeGauge(
    'onerecord_store_quads',
    'Quads in the store (counted at start, then kept by each commit)',
    (c) => c.quads,
  );
  storeGauge(
    'onerecord_store_capacity_quads',
    'Quads the store may hold (store.capacityQuads); writes past it are refused with 507',
    (c) => c.capacityQuads,
  );
  storeGauge(
    'onerecord_store_headroom_quads',
    'Quads that may still be written before the store refuses writes',
    (c) => c.headroomQuads,
  );
  storeGauge(
    'onerecord_store_writes_refused',
    '1 while writes are refused (store full, or a change that could not be applied), else 0',
    (c) => (c.writesRefused ? 1 : 0),
  );
  storeGauge(
    'onerecord_wasm_memory_bytes',
    "Size of Oxigraph's WASM linear memory (reserved ahead of need, so more than in use)",
    (c) => c.wasmMemoryBytes,
  );
  storeGauge(
    'onerecord_wasm_memory_limit_bytes',
    "Where Oxigraph's WASM memory ends (4 GiB)",
    (c) => c.wasmMemoryLimitBytes,
  );
}
/**
 * The server's Prometheus metrics, in a registry of its own (created once per server, passed
 * down). Request metrics come from the request observer, domain counts from the after-commit
 * stream, store and journal metrics from the store's observer.
 */
export class ServerMetrics {
  readonly registry = new Registry();
  private readonly requests: Histogram<'method' | 'route' | 'status'>;
  /** Label children by `method route status`: a lookup per request instead of label hashing. */
  private readonly requestChildren = new Map<string, { observe(value: number): void }>();
  readonly journalFlushSeconds: Histogram;
  readonly journalBatchRecords: Histogram;
  readonly snapshotSeconds: Histogram;
  readonly commitFeedLagSeconds: Histogram;
  private readonly counts: ReturnType<typeof domainCounters>;
  private readonly sparqlQueries: Histogram<'view' | 'outcome'>;
  readonly sparqlReplicaVisibleSeconds: Histogram;
  readonly sparqlReplicaWorkers: Gauge;

  constructor(sources: MetricSources) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.requests = requestHistogram(registers);
    ({
      journalFlushSeconds: this.journalFlushSeconds,
      journalBatchRecords: this.journalBatchRecords,
      snapshotSeconds: this.snapshotSeconds,
      commitFeedLagSeconds: this.commitFeedLagSeconds,
    } = storeHistograms(registers));
    this.counts = domainCounters(registers);
    ({
      queries: this.sparqlQueries,
      replicaVisibleSeconds: this.sparqlReplicaVisibleSeconds,
      replicaWorkers: this.sparqlReplicaWorkers,
    } = sparqlMetrics(registers));
    outboxGauges(registers, sources);
    storeGauges(registers, sources);
  }

  /**
   * Consumer of the after-commit stream, subscribed after the replay at start: it counts what
   * this process committed, never what the store already held.
   */
  readonly onCommitted = (events: readonly DomainEvent[]): void => {
    for (const event of events) {
      switch (event.kind) {
        case 'event-appended':
          this.counts.logisticsEvents.inc();
          break;
        case 'notification-queued':
          this.counts.notificationsQueued.inc(event.entry.recipients);
          break;
        case 'notification-received':
          this.counts.notificationsReceived.inc();
          break;
        case 'action-request-created':
        case 'action-request-decided':
        case 'action-request-revoked':
          this.counts.actionRequests.inc({
            type: localName(event.request.type),
            status: localName(event.status.status),
          });
          break;
      }
    }
  };

  /** Delivery's observer: one count per attempt's outcome. */
  readonly deliveryOutcome = (outcome: DeliveryOutcome): void => {
    this.counts.deliveries.inc({ outcome });
  };

  /** The analytics' observer: one observation per SPARQL query run. */
  readonly queryFinished = (finished: FinishedQuery): void => {
    this.sparqlQueries.observe({ view: finished.view, outcome: finished.outcome }, finished.seconds);
  };

  /** The request observer (see RequestObservation). */
  readonly observeRequest: RequestObserver = (_res, finished) => {
    const key = `${finished.method} ${finished.route} ${finished.status}`;
    let child = this.requestChildren.get(key);
    if (!child) {
      child = this.requests.labels(finished.method, finished.route, String(finished.status));
      this.requestChildren.set(key, child);
    }
    child.observe(finished.seconds);
  };
}
