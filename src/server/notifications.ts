import type { Config } from '../config.js';
import { Delivery } from '../domain/pubsub/delivery.js';
import type { DeliveryGroup } from '../domain/pubsub/delivery-groups.js';
import { LeasedDelivery } from '../domain/pubsub/leased-delivery.js';
import { PartnerOffers } from '../domain/pubsub/partner-offers.js';
import { SettleBatches } from '../domain/pubsub/settle-batches.js';
import { WebhookForwarder } from '../domain/pubsub/webhook-forwarder.js';
import type { Lifecycle } from '../observability/health.js';
import type { ServerMetrics } from '../observability/metrics.js';
import { OutboundClient } from '../outbound/http-client.js';
import type { TokenSource } from '../outbound/tokens.js';
import { storedOutboxEvents } from '../store/schema/stored-events.js';
import type { Domain } from './domain.js';
import type { OpenedStore } from './open-store.js';

/** What the notification machinery takes from the server being started. */
export interface NotificationParts {
  config: Config;
  opened: OpenedStore;
  domain: Domain;
  outbound: OutboundClient;
  tokens: TokenSource | undefined;
  /** The data holder's IRI: the subscriber offered to partners. */
  holder: string;
  /** The log of the notification machinery. */
  log: (message: string) => void;
  metrics: ServerMetrics | undefined;
  lifecycle: Lifecycle;
}

/**
 * The delivery of the outbox's notifications; with several processes on one engine, the queues are in groups, each
 * delivered by the process holding its lease (docs/sparql-engine.md, "Several processes").
 */
export function notificationDelivery(parts: NotificationParts): LeasedDelivery {
  const { config, opened, domain, outbound, tokens, log, metrics, lifecycle } = parts;
  const { store } = opened;
  const engine = config.store.sparql;
  const sharedEngine = config.store.backend === 'sparql' && engine.sharedWriters;
  const leases = sharedEngine
    ? opened.leases?.('notification-delivery', engine.deliveryGroups, { termMs: engine.deliveryLeaseMillis, log })
    : undefined;
  // The settle commits of the groups this process delivers go to the engine together.
  const settleWriter = leases && leases.length > 1 ? new SettleBatches(store) : undefined;
  const deliverer = (group?: DeliveryGroup) =>
    new Delivery(
      store,
      domain.subscriptions,
      (revision) => domain.objects.triples(revision),
      outbound,
      tokens,
      config.delivery,
      log,
      metrics?.deliveryOutcome,
      () => lifecycle.serving(),
      {
        inFlight: domain.outbox.inFlight,
        // Another process may be writing a number this one has not seen.
        othersWaitMs: sharedEngine ? engine.outboxGapWaitMillis : 0,
        // A killed process's write under way is completed once the others take it for dead (within
        // 1.5 times that).
        awaitedMs: sharedEngine ? 3 * engine.processDeadAfterMillis : 0,
      },
      group && { ...group, settleWriter },
    );
  return new LeasedDelivery(deliverer, leases, {
    readStored: () => storedOutboxEvents(store),
    caughtUp: () => opened.othersCaughtUp?.() ?? Promise.resolve(),
    log,
  });
}

/** With `notifications.webhookUrl`: each notification received, forwarded as it is stored. */
export function forwardToWebhook({ config, opened, domain, log }: NotificationParts): void {
  if (!config.notifications.webhookUrl) return;
  // Operator-configured and usually on a private network: the address guard does not apply.
  const webhook = new WebhookForwarder(
    config.notifications.webhookUrl,
    new OutboundClient({ ...config.outbound, allowPrivateAddresses: true }),
    domain.receivedNotifications,
    log,
  );
  opened.store.committed.subscribe((events) => webhook.onCommitted(events), false);
}

/** With `partners`: the subscriptions this server wants, offered to each partner server. */
export function offerToPartners(parts: NotificationParts): void {
  const { config, opened, domain, outbound, tokens, holder, log } = parts;
  if (config.partners.length === 0) return;
  const offers = new PartnerOffers(
    config.partners,
    domain.subscriptions,
    domain.ontology,
    outbound,
    tokens,
    domain.access.caller(holder),
    config.limits,
    log,
  );
  opened.store.committed.subscribe((events) => offers.onCommitted(events), false);
}
