import { dateTimeLiteral, iriToNt, literal, namedNode, quad, type Quad } from '../../rdf/terms.js';
import { store as meta } from '../../rdf/vocab.js';
import type { SparqlReader } from '../readers.js';

/**
 * Subscriptions this server (as subscriber) asked other servers for: one entry per
 * SubscriptionRequest a publisher answered, in `urn:onerecord:store:remote-subscriptions`.
 */
export interface RemoteSubscriptionRecord {
  /** The SubscriptionRequest IRI the publisher answered (its Location). */
  request: string;
  /** Base URL of the publisher. */
  publisher: string;
  topicType: string;
  topic: string;
  subscribedAt: Date;
}

export function remoteSubscriptionQuads(r: RemoteSubscriptionRecord): Quad[] {
  const g = namedNode(meta.remoteSubscriptionsGraph);
  const s = namedNode(r.request);
  return [
    quad(s, namedNode(meta.remotePublisher), literal(r.publisher), g),
    quad(s, namedNode(meta.remoteTopicType), namedNode(r.topicType), g),
    quad(s, namedNode(meta.remoteTopic), literal(r.topic), g),
    quad(s, namedNode(meta.remoteSubscribedAt), dateTimeLiteral(r.subscribedAt), g),
  ];
}

/** Every remote subscription, oldest first. */
export async function readRemoteSubscriptions(reader: SparqlReader): Promise<RemoteSubscriptionRecord[]> {
  const p = iriToNt;
  const rows = await reader.select(`SELECT ?r ?pub ?type ?topic ?at WHERE { GRAPH ${p(meta.remoteSubscriptionsGraph)} {
    ?r ${p(meta.remotePublisher)} ?pub ; ${p(meta.remoteTopicType)} ?type ;
       ${p(meta.remoteTopic)} ?topic ; ${p(meta.remoteSubscribedAt)} ?at } }`);
  return rows.results.bindings
    .map((b) => ({
      request: b.r.value,
      publisher: b.pub.value,
      topicType: b.type.value,
      topic: b.topic.value,
      subscribedAt: new Date(b.at.value),
    }))
    .sort((a, b) => a.subscribedAt.getTime() - b.subscribedAt.getTime() || (a.request < b.request ? -1 : 1));
}
