import type { Caller } from '../access/authorizer.js';
import type { PartnerConfig } from '../../config.js';
import type { CargoOntology } from '../../rdf/ontology.js';
import { parseBody } from '../../rdf/parse.js';
import type { Limits } from '../../config.js';
import { api, cargo, rdf } from '../../rdf/vocab.js';
import type { OutboundClient } from '../../outbound/http-client.js';
import type { TokenSource } from '../../outbound/tokens.js';
import type { RevisionRecord } from '../../store/schema/revisions.js';
import type { DomainEvent } from '../../store/transaction.js';
import type { Subscriptions } from './subscriptions.js';

/**
 * Publisher-initiated subscriptions: when an object is created whose type matches a configured
 * partner, the partner is asked `GET {partner}/subscriptions?topicType=…&topic={object}`; each
 * Subscription it answers for that topic becomes an accepted SubscriptionRequest here (requested
 * by this server's holder). A consumer of the live after-commit stream; failures are logged.
 */
export class PartnerOffers {
  constructor(
    private readonly partners: readonly PartnerConfig[],
    private readonly subscriptions: Subscriptions,
    private readonly ontology: CargoOntology,
    private readonly client: OutboundClient,
    private readonly tokens: TokenSource | undefined,
    private readonly holder: Caller,
    private readonly limits: Limits,
    private readonly log: (message: string) => void,
  ) {}

  onCommitted(events: readonly DomainEvent[]): void {
    for (const e of events) {
      if (e.kind !== 'object-created') continue;
      for (const partner of this.partners) {
        const types = partner.types.length > 0 ? partner.types : [cargo.LogisticsObject];
        if (types.some((t) => this.ontology.isSubClassOf(e.revision.mostSpecificType, t))) {
          void this.ask(partner.url.replace(/\/+$/, ''), e.revision).catch((err: Error) =>
            this.log(`partner ${partner.url}: ${err.message}`),
          );
        }
      }
    }
  }

  private async ask(partner: string, revision: RevisionRecord): Promise<void> {
    const query = new URLSearchParams({ topicType: api.LOGISTICS_OBJECT_IDENTIFIER, topic: revision.object });
    const token = await this.tokens?.token();
    const res = await this.client.request(`${partner}/subscriptions?${query}`, {
      method: 'GET',
      headers: { Accept: 'application/ld+json', ...(token ? { Authorization: `Bearer ${token}` } : {}) },
    });
    if (res.status !== 200) throw new Error(`GET /subscriptions answered ${res.status}`);
    const quads = await parseBody(Buffer.from(res.body), 'jsonld', { base: `${partner}/`, limits: this.limits });
    const nodes = new Set(
      quads
        .filter((q) => q.predicate.value === rdf.type && q.object.value === api.Subscription)
        .map((q) => q.subject.value),
    );
    for (const node of nodes) {
      const own = quads.filter((q) => q.subject.value === node);
      // The publisher compares what it asked for with what it got.
      const about = (p: string) => own.find((q) => q.predicate.value === p)?.object.value;
      if (about(api.hasTopic) !== revision.object || about(api.hasTopicType) !== api.LOGISTICS_OBJECT_IDENTIFIER) {
        this.log(`partner ${partner} answered a Subscription for another topic; ignored`);
        continue;
      }
      const request = await this.subscriptions.submit(own, this.holder, { accept: true });
      this.log(`partner ${partner} subscribed to ${revision.object}: ${request.iri}`);
    }
  }
}
