/** Every vocabulary IRI the server uses, in one place. */

export const CARGO = 'https://onerecord.iata.org/ns/cargo#';
export const API = 'https://onerecord.iata.org/ns/api#';
export const XSD = 'http://www.w3.org/2001/XMLSchema#';
export const RDF = 'http://www.w3.org/1999/02/22-rdf-syntax-ns#';
export const RDFS = 'http://www.w3.org/2000/01/rdf-schema#';
export const OWL = 'http://www.w3.org/2002/07/owl#';
export const CODE_LISTS = 'https://onerecord.iata.org/ns/code-lists/';
/** W3C Web Access Control, the terms grants are stored in (as IATA's ACL.json example). */
export const ACL = 'http://www.w3.org/ns/auth/acl#';
/** Server-side bookkeeping (revision metadata); never served to clients. */
export const STORE = 'urn:onerecord:store:';
/** Scheme of embedded-object identifiers. */
export const INTERNAL_SCHEME = 'internal:';

export const ONTOLOGY_IRIS = {
  cargo: 'https://onerecord.iata.org/ns/cargo',
  cargoVersion: 'https://onerecord.iata.org/ns/cargo/3.3.0',
  api: 'https://onerecord.iata.org/ns/api',
  apiVersion: 'https://onerecord.iata.org/ns/api/2.3.0',
} as const;

export const rdf = {
  type: `${RDF}type`,
  langString: `${RDF}langString`,
} as const;

export const rdfs = { subClassOf: `${RDFS}subClassOf` } as const;
export const owl = { Class: `${OWL}Class` } as const;

export const xsd = {
  string: `${XSD}string`,
  boolean: `${XSD}boolean`,
  integer: `${XSD}integer`,
  positiveInteger: `${XSD}positiveInteger`,
  double: `${XSD}double`,
  float: `${XSD}float`,
  duration: `${XSD}duration`,
  decimal: `${XSD}decimal`,
  dateTime: `${XSD}dateTime`,
  anyURI: `${XSD}anyURI`,
} as const;

export const cargo = {
  LogisticsObject: `${CARGO}LogisticsObject`,
  LogisticsEvent: `${CARGO}LogisticsEvent`,
  Organization: `${CARGO}Organization`,
  name: `${CARGO}name`,
  eventFor: `${CARGO}eventFor`,
  eventDate: `${CARGO}eventDate`,
  creationDate: `${CARGO}creationDate`,
  eventCode: `${CARGO}eventCode`,
  eventTimeType: `${CARGO}eventTimeType`,
  events: `${CARGO}events`,
  code: `${CARGO}code`,
  codeListName: `${CARGO}codeListName`,
  codeListReference: `${CARGO}codeListReference`,
} as const;

export const api = {
  ServerInformation: `${API}ServerInformation`,
  Error: `${API}Error`,
  ErrorDetail: `${API}ErrorDetail`,
  /** The detail class's name before API 2.3; still understood on input. */
  ErrorDetails: `${API}ErrorDetails`,
  Collection: `${API}Collection`,
  hasRevision: `${API}hasRevision`,
  hasLatestRevision: `${API}hasLatestRevision`,
  hasLogisticsEvent: `${API}hasLogisticsEvent`,
  hasItem: `${API}hasItem`,
  hasTotalItems: `${API}hasTotalItems`,
  MultiStatusResponse: `${API}MultiStatusResponse`,
  EventCreationResult: `${API}EventCreationResult`,
  hasCreationResult: `${API}hasCreationResult`,
  hasTotalCreated: `${API}hasTotalCreated`,
  hasTotalFailed: `${API}hasTotalFailed`,
  hasHTTPStatus: `${API}hasHTTPStatus`,
  // Action requests, change requests and the audit trail.
  ChangeRequest: `${API}ChangeRequest`,
  AccessDelegationRequest: `${API}AccessDelegationRequest`,
  SubscriptionRequest: `${API}SubscriptionRequest`,
  Change: `${API}Change`,
  Operation: `${API}Operation`,
  OperationObject: `${API}OperationObject`,
  ADD: `${API}ADD`,
  DELETE: `${API}DELETE`,
  RequestStatusEntry: `${API}RequestStatusEntry`,
  AuditTrail: `${API}AuditTrail`,
  hasChange: `${API}hasChange`,
  hasOperation: `${API}hasOperation`,
  hasDescription: `${API}hasDescription`,
  hasLogisticsObject: `${API}hasLogisticsObject`,
  notifyRequestStatusChange: `${API}notifyRequestStatusChange`,
  op: `${API}op`,
  s: `${API}s`,
  p: `${API}p`,
  o: `${API}o`,
  hasDatatype: `${API}hasDatatype`,
  hasValue: `${API}hasValue`,
  hasError: `${API}hasError`,
  hasTitle: `${API}hasTitle`,
  hasErrorDetail: `${API}hasErrorDetail`,
  hasCode: `${API}hasCode`,
  hasMessage: `${API}hasMessage`,
  hasProperty: `${API}hasProperty`,
  hasResource: `${API}hasResource`,
  isRequestedBy: `${API}isRequestedBy`,
  isRequestedAt: `${API}isRequestedAt`,
  isRevokedBy: `${API}isRevokedBy`,
  isRevokedAt: `${API}isRevokedAt`,
  isChangedBy: `${API}isChangedBy`,
  hasRequestStatus: `${API}hasRequestStatus`,
  hasRequestStatusSince: `${API}hasRequestStatusSince`,
  hasRequestStatusHistory: `${API}hasRequestStatusHistory`,
  hasActionRequest: `${API}hasActionRequest`,
  hasChangeRequest: `${API}hasChangeRequest`,
  // Access delegation.
  AccessDelegation: `${API}AccessDelegation`,
  hasAccessDelegation: `${API}hasAccessDelegation`,
  hasPermission: `${API}hasPermission`,
  isRequestedFor: `${API}isRequestedFor`,
  expiresAt: `${API}expiresAt`,
  // Subscriptions and notifications.
  Subscription: `${API}Subscription`,
  Notification: `${API}Notification`,
  NotificationEventType: `${API}NotificationEventType`,
  hasSubscription: `${API}hasSubscription`,
  hasSubscriber: `${API}hasSubscriber`,
  hasTopicType: `${API}hasTopicType`,
  hasTopic: `${API}hasTopic`,
  hasContentType: `${API}hasContentType`,
  sendLogisticsObjectBody: `${API}sendLogisticsObjectBody`,
  includeSubscriptionEventType: `${API}includeSubscriptionEventType`,
  hasEventType: `${API}hasEventType`,
  hasLogisticsObjectType: `${API}hasLogisticsObjectType`,
  hasChangedProperty: `${API}hasChangedProperty`,
  isTriggeredBy: `${API}isTriggeredBy`,
  LOGISTICS_OBJECT_TYPE: `${API}LOGISTICS_OBJECT_TYPE`,
  LOGISTICS_OBJECT_IDENTIFIER: `${API}LOGISTICS_OBJECT_IDENTIFIER`,
} as const;

/** The SubscriptionEventType values (also NotificationEventType values). */
export const subscriptionEventType = {
  CREATED: `${API}LOGISTICS_OBJECT_CREATED`,
  UPDATED: `${API}LOGISTICS_OBJECT_UPDATED`,
  EVENT_RECEIVED: `${API}LOGISTICS_EVENT_RECEIVED`,
} as const;

/** The four ONE Record permissions (api:Permission). */
export const permission = {
  GET_LOGISTICS_OBJECT: `${API}GET_LOGISTICS_OBJECT`,
  PATCH_LOGISTICS_OBJECT: `${API}PATCH_LOGISTICS_OBJECT`,
  POST_LOGISTICS_EVENT: `${API}POST_LOGISTICS_EVENT`,
  GET_LOGISTICS_EVENT: `${API}GET_LOGISTICS_EVENT`,
} as const;
export type Permission = (typeof permission)[keyof typeof permission];
export const PERMISSIONS: readonly Permission[] = Object.values(permission);

export const acl = {
  Authorization: `${ACL}Authorization`,
  agent: `${ACL}agent`,
  agentClass: `${ACL}agentClass`,
  accessTo: `${ACL}accessTo`,
  mode: `${ACL}mode`,
  Read: `${ACL}Read`,
  Write: `${ACL}Write`,
  Append: `${ACL}Append`,
  AuthenticatedAgent: `${ACL}AuthenticatedAgent`,
} as const;

/** The local name of an api: term given as `NAME`, `api:NAME` or the full IRI (`#` sent as `%23` or `/`). */
export function apiLocalName(value: string): string {
  for (const prefix of [API, `${API.slice(0, -1)}/`, 'api:'])
    if (value.startsWith(prefix)) return value.slice(prefix.length);
  return value;
}

/** The RequestStatus values of action requests. */
export const requestStatus = {
  PENDING: `${API}REQUEST_PENDING`,
  ACCEPTED: `${API}REQUEST_ACCEPTED`,
  REJECTED: `${API}REQUEST_REJECTED`,
  FAILED: `${API}REQUEST_FAILED`,
  REVOKED: `${API}REQUEST_REVOKED`,
} as const;

/** The individuals of cargo:EventTimeType in the cargo ontology. */
export const EVENT_TIME_TYPES: readonly string[] = ['ACTUAL', 'ESTIMATED', 'EXPECTED', 'PLANNED', 'REQUESTED'].map(
  (name) => `${CARGO}${name}`,
);

/** Bookkeeping predicates of the metadata graph. */
export const store = {
  metaGraph: `${STORE}meta`,
  revisionOf: `${STORE}revisionOf`,
  revisionNumber: `${STORE}revisionNumber`,
  revisionCreatedAt: `${STORE}createdAt`,
  revisionCreatedBy: `${STORE}createdBy`,
  revisionType: `${STORE}mostSpecificType`,
  /** On a SPARQL engine: an object's latest revision graph, replaced by each new revision (ObjectCatalog's reads). */
  latestRevision: `${STORE}latestRevision`,
  /**
   * On a SPARQL engine: an object's latest revision's number, time, author and type in one plain literal, replaced by
   * each new revision (ObjectCatalog.object reads it and the creator with one pattern each).
   */
  objectRecord: `${STORE}objectRecord`,
  /** On a SPARQL engine: the version of its layout (`engineLayoutVersion`), on the metadata graph itself. */
  layoutVersion: `${STORE}layoutVersion`,
  /** What `revisionType` was called before; still read, never written. */
  revisionTypeBefore: `${STORE}typeHeader`,
  /**
   * On a SPARQL engine: the graphs commits finished (WriteTransaction.finished), which the in-memory indexes leave to
   * the engine.
   */
  finishedGraphs: `${STORE}finished-graphs`,
  finishedGraph: `${STORE}finished`,
  /** Graph of Logistics Event metadata (which object, dates, codes), read once at start. */
  eventsGraph: `${STORE}events`,
  eventOf: `${STORE}eventOf`,
  eventSequence: `${STORE}eventSequence`,
  eventRecordedAt: `${STORE}eventRecordedAt`,
  eventCreationDate: `${STORE}eventCreationDate`,
  eventDate: `${STORE}eventDate`,
  eventCreatedBy: `${STORE}eventCreatedBy`,
  eventCode: `${STORE}eventCode`,
  /** Action requests: the Logistics Objects a request concerns, and its status entries in order. */
  concerns: `${STORE}concerns`,
  statusEntry: `${STORE}statusEntry`,
  statusNumber: `${STORE}statusNumber`,
  /** The request's content (a Change, an AccessDelegation) asked for status notifications to its requester. */
  notifiesRequester: `${STORE}notifiesRequester`,
  /** Moved Logistics Objects: where each went, whether for good, when and by whom. */
  movesGraph: `${STORE}moves`,
  movedTo: `${STORE}movedTo`,
  movedPermanently: `${STORE}movedPermanently`,
  movedAt: `${STORE}movedAt`,
  movedBy: `${STORE}movedBy`,
  /**
   * Grants (acl:Authorization graphs): who granted, when, from which AccessDelegationRequest, derived from which
   * grants, until when.
   */
  grantedBy: `${STORE}grantedBy`,
  grantedAt: `${STORE}grantedAt`,
  grantDelegation: `${STORE}delegation`,
  grantDerivedFrom: `${STORE}derivedFrom`,
  grantExpiresAt: `${STORE}expiresAt`,
  grantWithdrawnAt: `${STORE}withdrawnAt`,
  grantWithdrawnBy: `${STORE}withdrawnBy`,
  /** Received notifications: one graph per notification, its content plus what the receiver noted. */
  receivedFrom: `${STORE}receivedFrom`,
  receivedAt: `${STORE}receivedAt`,
  receivedSequence: `${STORE}receivedSequence`,
  receivedNotification: `${STORE}receivedNotification`,
  idempotencyKey: `${STORE}idempotencyKey`,
  /**
   * The outbox (see store/schema/outbox.ts): one entry per notifying write, the positions of its queues, parked
   * notifications.
   */
  outboxEntry: `${STORE}outboxEntry`,
  outboxPositionsGraph: `${STORE}outbox-positions`,
  settledThrough: `${STORE}settledThrough`,
  notifiedAfter: `${STORE}notifiedAfter`,
  compactedThrough: `${STORE}compactedThrough`,
  outboxQueue: `${STORE}outboxQueue`,
  outboxGroup: `${STORE}outboxGroup`,
  outboxSequence: `${STORE}outboxSequence`,
  queuedAt: `${STORE}queuedAt`,
  forSubscription: `${STORE}forSubscription`,
  callback: `${STORE}callback`,
  outboxNotification: `${STORE}outboxNotification`,
  aboutRevision: `${STORE}aboutRevision`,
  deadLetteredAt: `${STORE}deadLetteredAt`,
  deadLetterReason: `${STORE}deadLetterReason`,
  /** Subscriptions this server holds at other servers: the SubscriptionRequest each one answered. */
  remoteSubscriptionsGraph: `${STORE}remote-subscriptions`,
  remotePublisher: `${STORE}remotePublisher`,
  remoteTopicType: `${STORE}remoteTopicType`,
  remoteTopic: `${STORE}remoteTopic`,
  remoteSubscribedAt: `${STORE}remoteSubscribedAt`,
} as const;

/** The JSON-LD context of every document the server writes. */
export const OUTPUT_CONTEXT = { cargo: CARGO, api: API, xsd: XSD } as const;
