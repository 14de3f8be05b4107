import type { Config } from '../config.js';
import { AccessDelegations } from '../domain/requests/access-delegations.js';
import { Authorizer } from '../domain/access/authorizer.js';
import { GrantIndex } from '../domain/access/grant-index.js';
import { Grants } from '../domain/requests/grants.js';
import { EventIndex } from '../domain/events/event-index.js';
import { LogisticsEvents } from '../domain/events/logistics-events.js';
import { MovedObjects } from '../domain/moves/moved-objects.js';
import { LogisticsObjects } from '../domain/objects/logistics-objects.js';
import { RevisionIndex } from '../domain/objects/revision-index.js';
import { notifyingWriter } from '../domain/pubsub/notifying-writer.js';
import { Outbox } from '../domain/pubsub/outbox.js';
import { ReceivedNotifications } from '../domain/pubsub/received-notifications.js';
import { RemoteSubscriptions } from '../domain/pubsub/remote-subscriptions.js';
import { SubscriptionIndex, Subscriptions } from '../domain/pubsub/subscriptions.js';
import { ActionRequestIndex } from '../domain/requests/action-request-index.js';
import { ActionRequests } from '../domain/requests/action-requests.js';
import { ChangeRequests } from '../domain/requests/change-requests.js';
import type { OutboundClient } from '../outbound/http-client.js';
import type { TokenSource } from '../outbound/tokens.js';
import { projectFile } from '../project-files.js';
import { ApiOntology } from '../rdf/api-ontology.js';
import { CargoOntology } from '../rdf/ontology.js';
import { api } from '../rdf/vocab.js';
import { ShapeValidator } from '../shapes/validator.js';
import type { ServerStore } from './open-store.js';
import type { DomainEvent } from '../store/transaction.js';
import type { StoreWriter } from '../store/graph-store.js';

export const ONTOLOGY_FILE = projectFile('ontology/IATA-1R-DM-Ontology.ttl');
export const API_ONTOLOGY_FILE = projectFile('ontology/ONE-Record-API-Ontology.ttl');

/**
 * What the files under ontology/ and shapes/ give, read once per process: they never change while
 * it runs, and a process that starts several servers (the tests) would otherwise read them for each.
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

/** The in-memory state the after-commit stream keeps, and the Authorizer over the grants. */
interface Indexes {
  grantIndex: GrantIndex;
  access: Authorizer;
  index: RevisionIndex;
  eventIndex: EventIndex;
  requestIndex: ActionRequestIndex;
  subscriptionIndex: SubscriptionIndex;
  /** Numbers each commit's notifications: the writers whose commits notify commit through it. */
  outbox: Outbox;
}

/** What reacts to each commit; replaying what the store holds builds its state. */
export interface CommitConsumer {
  onCommitted(events: readonly DomainEvent[]): void;
}

/** The domain layer over one store: one service per capability, the indexes they share, the Authorizer. */
export interface Domain extends Indexes {
  ontology: CargoOntology;
  objects: LogisticsObjects;
  moves: MovedObjects;
  events: LogisticsEvents;
  receivedNotifications: ReceivedNotifications;
  actionRequests: ActionRequests;
  changeRequests: ChangeRequests;
  subscriptions: Subscriptions;
  grants: Grants;
  accessDelegations: AccessDelegations;
  /** Subscriptions this server holds at other servers. */
  remoteSubscriptions: RemoteSubscriptions;
  /** What the after-commit stream feeds, in this order. */
  consumers: CommitConsumer[];
}

/** How the domain reaches the world: the data holder's IRI, outbound calls and the token they carry. */
export interface DomainReach {
  holder: string;
  outbound: OutboundClient;
  tokens: TokenSource | undefined;
}

async function indexes(config: Config, store: ServerStore, ontology: CargoOntology, holder: string): Promise<Indexes> {
  const grantIndex = new GrantIndex();
  const access = new Authorizer(new Set([holder, ...config.internalAgents]), config.hideForbidden, grantIndex);
  const history = (object: string, number: number) => store.revision(object, number);
  const index = store.objectCatalog
    ? RevisionIndex.cached(history, store.objectCatalog, config.cache.objectBytes)
    : RevisionIndex.complete(history);
  const subscriptionIndex = new SubscriptionIndex(ontology, index, access, config.delivery.callbacks);
  const outbox = new Outbox(subscriptionIndex, index, config.baseUrl, holder);
  const eventIndex = await EventIndex.open(store.logisticsEvents, config.cache.events);
  const requestIndex = new ActionRequestIndex();
  return { grantIndex, access, index, eventIndex, requestIndex, subscriptionIndex, outbox };
}

/** What the action requests' services are built from. */
interface RequestParts {
  config: Config;
  store: ServerStore;
  writes: StoreWriter;
  shared: Indexes;
  objects: LogisticsObjects;
  ontology: CargoOntology;
  reach: DomainReach;
}

/** The services of the action requests, each kind registered with the acceptor that carries it out. */
function actionRequestKinds({ config, store, writes, shared, objects, ontology, reach }: RequestParts) {
  const { access, requestIndex, subscriptionIndex, grantIndex } = shared;
  const { holder, outbound } = reach;
  const { baseUrl, decisionPolicy: policy } = config;
  const actionRequests = new ActionRequests(store, writes, requestIndex, access, baseUrl);
  const changeRequests = new ChangeRequests(
    store,
    writes.claims,
    access,
    objects,
    actionRequests,
    ontology,
    policy,
    holder,
  );
  const subscriptions = new Subscriptions(subscriptionIndex, actionRequests, {
    policy,
    holder,
    refuseCallback: (url) => outbound.refusal(url),
    shapeViolations: (triples) => objects.shapeViolations(triples),
  });
  const grants = new Grants(writes.claims, grantIndex, access, objects, actionRequests, baseUrl);
  const accessDelegations = new AccessDelegations(access, objects, actionRequests, grants, policy, holder);
  actionRequests.registerAcceptor(api.ChangeRequest, changeRequests);
  actionRequests.registerAcceptor(api.SubscriptionRequest, subscriptions);
  actionRequests.registerAcceptor(api.AccessDelegationRequest, accessDelegations);
  return { actionRequests, changeRequests, subscriptions, grants, accessDelegations };
}

/** Builds the domain layer over `store`; its state is built once the store publishes what it holds. */
export async function buildDomain(config: Config, store: ServerStore, reach: DomainReach): Promise<Domain> {
  const ontology = cargoOntology();
  const shared = await indexes(config, store, ontology, reach.holder);
  const { access } = shared;
  // Writers commit through the outbox's numbering: each commit queues the notifications it causes.
  const writes = notifyingWriter(store, shared.outbox);
  const shapes = config.validation.enabled
    ? shapeValidators[config.validation.strict ? 'strict' : 'lenient']()
    : undefined;
  const objects = new LogisticsObjects(store, writes, shared.index, ontology, access, config.baseUrl, shapes);
  const moves = new MovedObjects(store, objects, access);
  const receivedNotifications = await ReceivedNotifications.open(store, apiOntology(), access, (triples) =>
    objects.shapeViolations(triples),
  );
  const events = new LogisticsEvents(store, writes, shared.eventIndex, objects, ontology, access);
  const requests = actionRequestKinds({ config, store, writes, shared, objects, ontology, reach });
  const { outbound, tokens, holder } = reach;
  const remoteSubscriptions = new RemoteSubscriptions(store, ontology, access, outbound, tokens, holder);
  const { index, eventIndex, requestIndex, grantIndex, subscriptionIndex, outbox } = shared;
  return {
    ...shared,
    ...requests,
    ontology,
    objects,
    moves,
    events,
    receivedNotifications,
    remoteSubscriptions,
    consumers: [
      index,
      objects,
      eventIndex,
      requestIndex,
      moves,
      grantIndex,
      subscriptionIndex,
      outbox,
      remoteSubscriptions,
      receivedNotifications,
    ],
  };
}
