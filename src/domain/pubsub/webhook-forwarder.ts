import { writeJsonLd } from '../../rdf/jsonld-writer.js';
import type { OutboundClient } from '../../outbound/http-client.js';
import type { DomainEvent } from '../../store/transaction.js';
import type { ReceivedNotificationRecord } from '../../store/schema/received-notifications.js';
import type { ReceivedNotifications } from './received-notifications.js';

/** Attempts per notification; the webhook is on the operator's own network, so failures are rare and short. */
const ATTEMPTS = 3;
const RETRY_DELAY_MS = 1000;

/**
 * Forwards each notification this server stores (a consumer of the after-commit stream) to the
 * operator's internal webhook, as JSON-LD with its @id as Idempotency-Key. Best effort: the
 * notification is stored whatever happens here and stays listed under /internal/notifications.
 */
export class WebhookForwarder {
  constructor(
    private readonly url: string,
    private readonly client: OutboundClient,
    private readonly notifications: ReceivedNotifications,
    private readonly log: (message: string) => void,
  ) {}

  onCommitted(events: readonly DomainEvent[]): void {
    for (const e of events) if (e.kind === 'notification-received') void this.forward(e.notification);
  }

  private async forward(notification: ReceivedNotificationRecord): Promise<void> {
    const iri = notification.iri;
    let body: string;
    try {
      body = writeJsonLd({ iri, triples: await this.notifications.triples(notification) });
    } catch (err) {
      this.log(`webhook ${this.url}: notification ${iri} could not be read to forward it: ${(err as Error).message}`);
      return;
    }
    for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
      try {
        const res = await this.client.request(this.url, {
          method: 'POST',
          headers: { 'Content-Type': 'application/ld+json', 'Idempotency-Key': iri },
          body,
        });
        if (res.status >= 200 && res.status < 300) return;
        this.log(`webhook ${this.url} answered ${res.status} for notification ${iri} (attempt ${attempt})`);
      } catch (err) {
        this.log(`webhook ${this.url} failed for notification ${iri} (attempt ${attempt}): ${(err as Error).message}`);
      }
      await new Promise((resolve) => setTimeout(resolve, RETRY_DELAY_MS * attempt));
    }
  }
}
