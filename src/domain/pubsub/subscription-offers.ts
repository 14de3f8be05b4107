import { randomUUID } from 'node:crypto';
import { literal, namedNode, quad, xsdLiteral, type Quad } from '../../rdf/terms.js';
import { INTERNAL_SCHEME, api, rdf, subscriptionEventType, xsd } from '../../rdf/vocab.js';
import type { Topic } from './topics.js';

export const NOTIFICATION_CONTENT_TYPE = 'application/ld+json';

/** A Subscription as a document: its node and triples. */
export interface SubscriptionDocument {
  iri: string;
  triples: Quad[];
}

/**
 * The subscriber side of GET /subscriptions: the Subscription this server wants for a topic. One,
 * for the data holder, in JSON-LD, for all three event types (docs/behaviour.md); the publisher keeps it
 * as a SubscriptionRequest.
 */
export function wantedSubscription(holder: string, topic: Topic): SubscriptionDocument {
  const iri = `${INTERNAL_SCHEME}${randomUUID()}`;
  const s = namedNode(iri);
  return {
    iri,
    triples: [
      quad(s, namedNode(rdf.type), namedNode(api.Subscription)),
      quad(s, namedNode(api.hasSubscriber), namedNode(holder)),
      quad(s, namedNode(api.hasContentType), literal(NOTIFICATION_CONTENT_TYPE)),
      quad(s, namedNode(api.hasTopicType), namedNode(topic.type)),
      quad(s, namedNode(api.hasTopic), xsdLiteral(topic.topic, xsd.anyURI)),
      ...Object.values(subscriptionEventType).map((e) =>
        quad(s, namedNode(api.includeSubscriptionEventType), namedNode(e)),
      ),
    ],
  };
}
