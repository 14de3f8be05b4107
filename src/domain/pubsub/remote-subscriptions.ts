import type { Authorizer, Caller } from '../access/authorizer.js';
import { HttpError, badRequest } from '../../errors.js';
import { writeJsonLd } from '../../rdf/jsonld-writer.js';
import type { CargoOntology } from '../../rdf/ontology.js';
import { namedNode, quad, xsdLiteral } from '../../rdf/terms.js';
import { api, xsd } from '../../rdf/vocab.js';
import type { OutboundClient } from '../../outbound/http-client.js';
import type { TokenSource } from '../../outbound/tokens.js';
import type { StoreWriter } from '../../store/graph-store.js';
import { remoteSubscriptionQuads, type RemoteSubscriptionRecord } from '../../store/schema/remote-subscriptions.js';
import type { DomainEvent } from '../../store/transaction.js';
import { wantedSubscription } from './subscription-offers.js';
import { checkTopic, inBody, parseTopicType, type Topic } from './topics.js';

/** What an operator asks for: a topic at a publisher, and the options of the Subscription. */
export interface RemoteSubscriptionInput {
  topic: string;
  /** Default: LOGISTICS_OBJECT_IDENTIFIER. */
  topicType?: string;
  /** Base URL of the publisher; default: the origin of the topic object. */
  publisher?: string;
  sendLogisticsObjectBody?: boolean;
  notifyRequestStatusChange?: boolean;
}

const bad = (message: string, property: string) => badRequest('invalid_remote_subscription', message, property);

/**
 * The subscriber side of subscribing: this server posts the Subscription it wants to another
 * server's /subscriptions and keeps the SubscriptionRequest IRI the publisher answers (durably,
 * so operators can list and revoke them later).
 */
export class RemoteSubscriptions {
  private readonly records: RemoteSubscriptionRecord[] = [];

  constructor(
    private readonly store: StoreWriter,
    private readonly ontology: CargoOntology,
    private readonly access: Authorizer,
    private readonly client: OutboundClient,
    private readonly tokens: TokenSource | undefined,
    private readonly holder: string,
  ) {}

  onCommitted(events: readonly DomainEvent[]): void {
    // A commit's events may come twice (a process starting while others write on the same engine).
    for (const e of events)
      if (e.kind === 'remote-subscription-recorded' && !this.records.some((r) => r.request === e.subscription.request))
        this.records.push(e.subscription);
  }

  list(caller: Caller): readonly RemoteSubscriptionRecord[] {
    this.access.check(caller, { kind: 'operate', what: 'listing remote subscriptions' });
    return this.records;
  }

  async subscribe(input: RemoteSubscriptionInput, caller: Caller): Promise<RemoteSubscriptionRecord> {
    this.access.check(caller, { kind: 'operate', what: 'subscribing to other servers' });
    if (typeof input.topic !== 'string')
      throw bad('topic is required: a Logistics Object IRI or a Logistics Object class IRI', 'topic');
    for (const name of ['topicType', 'publisher'] as const)
      if (input[name] !== undefined && typeof input[name] !== 'string') throw bad(`${name} must be a string`, name);
    for (const name of ['sendLogisticsObjectBody', 'notifyRequestStatusChange'] as const)
      if (input[name] !== undefined && typeof input[name] !== 'boolean')
        throw bad(`${name} must be true or false`, name);
    const type = parseTopicType(input.topicType ?? api.LOGISTICS_OBJECT_IDENTIFIER, 'topicType', inBody);
    const topic: Topic = checkTopic(type, input.topic, this.ontology, 'topic', inBody);
    const publisher = (
      input.publisher ?? (type === api.LOGISTICS_OBJECT_IDENTIFIER ? new URL(topic.topic).origin : undefined)
    )?.replace(/\/+$/, '');
    if (!publisher || !/^https?:\/\//.test(publisher))
      throw bad('publisher (the base URL of the server to subscribe at) is required for a type topic', 'publisher');
    const wanted = wantedSubscription(this.holder, topic);
    const s = namedNode(wanted.iri);
    if (input.sendLogisticsObjectBody)
      wanted.triples.push(quad(s, namedNode(api.sendLogisticsObjectBody), xsdLiteral(true, xsd.boolean)));
    if (input.notifyRequestStatusChange)
      wanted.triples.push(quad(s, namedNode(api.notifyRequestStatusChange), xsdLiteral(true, xsd.boolean)));
    const token = await this.tokens?.token();
    const res = await this.client
      .request(`${publisher}/subscriptions`, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/ld+json',
          Accept: 'application/ld+json',
          ...(token ? { Authorization: `Bearer ${token}` } : {}),
        },
        body: writeJsonLd(wanted),
      })
      .catch((err: Error) => {
        throw new HttpError(
          502,
          'publisher_unreachable',
          { message: `${publisher}/subscriptions could not be reached: ${err.message}`, resource: publisher },
          'Bad gateway',
        );
      });
    const location = res.headers.location;
    if (res.status !== 201 || typeof location !== 'string') {
      throw new HttpError(
        502,
        'publisher_refused',
        {
          message: `${publisher}/subscriptions answered ${res.status}: ${res.body.slice(0, 500)}`,
          resource: publisher,
        },
        'Bad gateway',
      );
    }
    const record: RemoteSubscriptionRecord = {
      request: new URL(location, publisher).href,
      publisher,
      topicType: topic.type,
      topic: topic.topic,
      subscribedAt: new Date(),
    };
    const tx = this.store.begin({ insert: remoteSubscriptionQuads(record) });
    tx.events.push({ kind: 'remote-subscription-recorded', subscription: record });
    await this.store.commit(tx);
    return record;
  }
}
