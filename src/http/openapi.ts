import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import express, { type Router } from 'express';
import { ERROR_TITLES } from '../errors.js';

/**
 * The OpenAPI 3.1 description served at `/openapi.json`, `/openapi.yaml` and `/openapi`: the operations
 * of IATA's ONE Record API description (`ontology/ONE-Record-API-OpenAPI.yaml`, OpenAPI 3.0) this server
 * implements, upgraded to 3.1, plus our own routes. Response bodies use our schemas, since IATA's
 * describe expanded JSON-LD and our answers are compacted.
 */
const IATA_FILE = fileURLToPath(new URL('../../../ontology/ONE-Record-API-OpenAPI.yaml', import.meta.url));

type Json = Record<string, unknown>;
export type OpenApiDocument = Json & {
  paths: Record<string, Record<string, Json>>;
  components: Json & { schemas: Record<string, unknown> };
};

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const pathParam = (name: string) => ({ name, in: 'path', required: true, schema: { type: 'string' } });
const jsonLd = (schema: unknown) => ({ 'application/ld+json': { schema } });
const rdfText = {
  'text/turtle': { schema: { type: 'string' } },
  'application/n-triples': { schema: { type: 'string' } },
};

/** A compacted JSON-LD document whose `@type` is one of `types` (compact IRIs). */
const typed = (...types: string[]) => ({
  allOf: [ref('JsonLdDocument'), { type: 'object', required: ['@type'], properties: { '@type': { enum: types } } }],
});

/** Schemas of what this server answers (compacted JSON-LD with its `@context`). */
const SERVER_SCHEMAS: Record<string, unknown> = {
  JsonLdDocument: {
    description: 'A JSON-LD document in compacted form, with its @context',
    type: 'object',
    required: ['@context'],
    properties: {
      '@context': { type: ['object', 'array', 'string'] },
      '@id': { type: 'string' },
      '@type': { type: ['string', 'array'] },
      '@graph': { type: 'array' },
    },
  },
  ApiError: {
    description:
      'An api:Error in compacted JSON-LD (one or more api:ErrorDetails, each with hasCode = the HTTP status)',
    allOf: [
      ref('JsonLdDocument'),
      {
        type: 'object',
        required: ['@type', 'api:hasTitle', 'api:hasErrorDetail'],
        properties: {
          '@type': { const: 'api:Error' },
          'api:hasTitle': { type: 'string' },
          'api:hasErrorDetail': {
            oneOf: [ref('ApiErrorDetail'), { type: 'array', minItems: 1, items: ref('ApiErrorDetail') }],
          },
        },
      },
    ],
  },
  ApiErrorDetail: {
    type: 'object',
    required: ['@type', 'api:hasCode', 'api:hasMessage'],
    properties: {
      '@type': { const: 'api:ErrorDetail' },
      'api:hasCode': { type: 'string', pattern: '^[1-5][0-9][0-9]$' },
      'api:hasMessage': { type: 'string' },
    },
  },
  ServerInformationDocument: typed('api:ServerInformation'),
  LogisticsObjectDocument: {
    allOf: [ref('JsonLdDocument'), { type: 'object', required: ['@id', '@type'] }],
    description: 'A Logistics Object in compacted, nested JSON-LD',
  },
  ActionRequestDocument: typed(
    'api:ChangeRequest',
    'api:AccessDelegationRequest',
    'api:SubscriptionRequest',
    'api:VerificationRequest',
  ),
  AuditTrailDocument: typed('api:AuditTrail'),
  CollectionDocument: typed('api:Collection'),
  LogisticsEventDocument: { allOf: [ref('JsonLdDocument'), { type: 'object', required: ['@id', '@type'] }] },
  MultiStatusDocument: typed('api:MultiStatusResponse'),
  Health: {
    type: 'object',
    required: ['status'],
    properties: {
      status: { enum: ['live', 'ready', 'starting', 'stopping'] },
      store: {
        type: 'object',
        description:
          'How full the store is (readiness, once the store is open); writes past its capacity are refused with 507',
        required: [
          'quads',
          'capacityQuads',
          'headroomQuads',
          'wasmMemoryBytes',
          'wasmMemoryLimitBytes',
          'memoryReserveBytes',
        ],
        properties: {
          quads: { type: 'integer' },
          capacityQuads: { type: 'integer' },
          headroomQuads: { type: 'integer' },
          wasmMemoryBytes: { type: 'integer' },
          wasmMemoryLimitBytes: { type: 'integer' },
          memoryReserveBytes: { type: 'integer' },
          writesRefused: { type: 'string', description: 'why writes are refused, while they are' },
        },
      },
    },
  },
  TokenResponse: {
    type: 'object',
    required: ['access_token', 'token_type', 'expires_in'],
    properties: { access_token: { type: 'string' }, token_type: { const: 'Bearer' }, expires_in: { type: 'integer' } },
  },
  OAuthError: {
    type: 'object',
    required: ['error'],
    properties: { error: { type: 'string' }, error_description: { type: 'string' } },
  },
  Move: {
    type: 'object',
    required: ['object', 'location', 'permanent', 'movedAt', 'movedBy'],
    properties: {
      object: { type: 'string', format: 'uri' },
      location: { type: 'string', format: 'uri' },
      permanent: { type: 'boolean' },
      movedAt: { type: 'string', format: 'date-time' },
      movedBy: { type: 'string', format: 'uri' },
    },
  },
  SubscriptionDocument: typed('api:Subscription'),
  OutboxQueue: {
    type: 'object',
    required: ['queue', 'callback', 'pending', 'inMemory', 'attempts'],
    properties: {
      queue: { type: 'string', description: 'subscriber and topic' },
      callback: { type: 'string' },
      pending: { type: 'integer', minimum: 0 },
      inMemory: {
        type: 'integer',
        minimum: 0,
        description:
          'of the pending ones, how many are held in memory (the rest is read from the store as the queue drains)',
      },
      attempts: {
        type: 'integer',
        minimum: 0,
        description: 'failed attempts of the notification at the head of the queue',
      },
      nextAttemptAt: { type: 'string', format: 'date-time' },
      lastError: { type: 'string' },
    },
  },
  DeadLetter: {
    type: 'object',
    required: [
      'notification',
      'queue',
      'subscription',
      'callback',
      'eventType',
      'queuedAt',
      'deadLetteredAt',
      'reason',
    ],
    properties: {
      notification: { type: 'string', format: 'uri' },
      queue: { type: 'string' },
      subscription: { type: 'string', format: 'uri' },
      callback: { type: 'string' },
      eventType: { type: 'string', format: 'uri' },
      object: { type: 'string', format: 'uri' },
      queuedAt: { type: 'string', format: 'date-time' },
      deadLetteredAt: { type: 'string', format: 'date-time' },
      reason: { type: 'string' },
    },
  },
  RemoteSubscription: {
    type: 'object',
    required: ['request', 'publisher', 'topicType', 'topic', 'subscribedAt'],
    properties: {
      request: { type: 'string', format: 'uri', description: 'the SubscriptionRequest the publisher answered' },
      publisher: { type: 'string', format: 'uri' },
      topicType: { type: 'string', format: 'uri' },
      topic: { type: 'string', format: 'uri' },
      subscribedAt: { type: 'string', format: 'date-time' },
    },
  },
  ReceiptList: {
    type: 'object',
    required: ['total', 'receipts'],
    properties: {
      total: { type: 'integer', minimum: 0, description: 'notifications matching the filter' },
      receipts: {
        type: 'array',
        items: {
          type: 'object',
          required: ['notification', 'sequence', 'sender', 'receivedAt', 'eventType'],
          properties: {
            notification: {
              type: 'string',
              format: 'uri',
              description: 'its @id as sent, or the internal: id given to one sent without',
            },
            sequence: { type: 'integer', minimum: 1, description: 'arrival number on this server' },
            sender: { type: 'string', format: 'uri', description: 'the logistics agent of the token it was sent with' },
            receivedAt: { type: 'string', format: 'date-time' },
            eventType: { type: 'string', format: 'uri' },
            object: { type: 'string', format: 'uri' },
            idempotencyKey: { type: 'string' },
          },
        },
      },
    },
  },
  ObjectList: {
    type: 'object',
    required: ['total', 'types', 'objects'],
    properties: {
      total: { type: 'integer', minimum: 0, description: 'objects matching the filter' },
      types: {
        type: 'object',
        additionalProperties: { type: 'integer' },
        description: 'every object held, counted by most specific type',
      },
      objects: {
        type: 'array',
        items: {
          type: 'object',
          required: ['iri', 'type', 'creator', 'revision', 'changedAt', 'changedBy'],
          properties: {
            iri: { type: 'string', format: 'uri' },
            type: { type: 'string', format: 'uri' },
            creator: { type: 'string', format: 'uri' },
            revision: { type: 'integer', minimum: 1 },
            changedAt: { type: 'string', format: 'date-time' },
            changedBy: { type: 'string', format: 'uri' },
          },
        },
      },
    },
  },
  JsonWebKeySet: {
    type: 'object',
    required: ['keys'],
    properties: { keys: { type: 'array', items: { type: 'object', required: ['kty'] } } },
  },
};

/** The IATA operations this server implements, and the schema of each success body it answers. */
const FROM_IATA: Record<string, Record<string, Record<string, Json>>> = {
  '/': { get: { '200': jsonLd(ref('ServerInformationDocument')) } },
  '/logistics-objects': { post: {} },
  '/logistics-objects/{logisticsObjectId}': {
    get: { '200': { ...jsonLd(ref('LogisticsObjectDocument')), ...rdfText } },
    patch: {},
  },
  '/logistics-objects/{logisticsObjectId}/audit-trail': {
    get: { '200': { ...jsonLd(ref('AuditTrailDocument')), 'text/turtle': { schema: { type: 'string' } } } },
  },
  '/logistics-objects/{logisticsObjectId}/logistics-events': {
    get: { '200': jsonLd(ref('CollectionDocument')) },
    post: {},
  },
  '/logistics-objects/{logisticsObjectId}/logistics-events/{logisticsEventsId}': {
    get: { '200': jsonLd(ref('LogisticsEventDocument')) },
  },
  '/action-requests/{actionRequestId}': { get: { '200': jsonLd(ref('ActionRequestDocument')) }, patch: {}, delete: {} },
  '/access-delegations': { post: {} },
  '/subscriptions': { get: { '200': jsonLd(ref('SubscriptionDocument')) }, post: {} },
  '/notifications': { post: {} },
};

const publicOperation = { security: [] };
const apiErrors = (...statuses: number[]) =>
  Object.fromEntries(
    statuses.map((s) => [String(s), { description: ERROR_TITLES[s], content: jsonLd(ref('ApiError')) }]),
  );
const metricsText = { 'text/plain; version=0.0.4': { schema: { type: 'string' } } };

const text = { schema: { type: 'string' } };
/** SPARQL answers: results for SELECT/ASK, RDF for CONSTRUCT/DESCRIBE (by Accept). */
const sparqlResults = {
  'application/sparql-results+json': { schema: { type: 'object', required: ['head'] } },
  'application/sparql-results+xml': text,
  'text/csv': text,
  'text/tab-separated-values': text,
  'text/turtle': text,
  'application/n-triples': text,
  'application/ld+json': { schema: { type: ['array', 'object'] } },
};
/** The filters and page of the received-notification listings. */
const receivedNotificationQuery = [
  {
    name: 'sender',
    in: 'query',
    required: false,
    schema: { type: 'string', format: 'uri' },
    description: 'the authenticated agent that sent it',
  },
  {
    name: 'event-type',
    in: 'query',
    required: false,
    schema: { type: 'string' },
    description: 'LOGISTICS_OBJECT_UPDATED, ... (short or IRI)',
  },
  { name: 'logistics-object', in: 'query', required: false, schema: { type: 'string', format: 'uri' } },
  { name: 'received-after', in: 'query', required: false, schema: { type: 'string', format: 'date-time' } },
  { name: 'received-before', in: 'query', required: false, schema: { type: 'string', format: 'date-time' } },
  { name: 'limit', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 1000, default: 100 } },
  { name: 'skip', in: 'query', required: false, schema: { type: 'integer', minimum: 0, default: 0 } },
];
const sparqlDataset = [
  {
    name: 'default-graph-uri',
    in: 'query',
    required: false,
    schema: { type: 'array', items: { type: 'string', format: 'uri' } },
    description: "graphs whose union is the default graph (replaces the query's FROM)",
  },
  {
    name: 'named-graph-uri',
    in: 'query',
    required: false,
    schema: { type: 'array', items: { type: 'string', format: 'uri' } },
    description: "the named graphs (replaces the query's FROM NAMED)",
  },
  {
    name: 'view',
    in: 'query',
    required: false,
    schema: { enum: ['latest', 'events', 'revisions', 'audit'], default: 'latest' },
    description: 'what the query sees (README, "SPARQL analytics")',
  },
];
const sparqlAnswer = (extra: Json = {}) => ({
  '200': {
    description:
      'The answer; SPARQL-Results-Truncated when cut at sparql.maxRows; SPARQL-Replica-Lag: 0 when it shows every write acknowledged before the query, else `<ms>; writes=<n>` (README, "SPARQL analytics")',
    headers: {
      'SPARQL-Results-Truncated': { required: false, schema: { type: 'string' } },
      'SPARQL-Replica-Lag': { required: false, schema: { type: 'string' } },
    },
    content: { ...sparqlResults, ...extra },
  },
});

/** Routes of this server that IATA's description does not have. */
const SERVER_PATHS: Record<string, Record<string, Json>> = {
  '/action-requests': {
    get: {
      tags: ['Action Requests'],
      summary: 'INTERNAL: List action requests',
      description:
        'Action requests as an api:Collection, filtered by status, type and the Logistics Object they concern (internal actors only)',
      operationId: 'listActionRequests',
      parameters: [
        {
          name: 'status',
          in: 'query',
          required: false,
          schema: { type: 'string' },
          description: 'REQUEST_PENDING, REQUEST_ACCEPTED, ... (short or IRI)',
        },
        {
          name: 'type',
          in: 'query',
          required: false,
          schema: { type: 'string' },
          description: 'ChangeRequest, ... (short or IRI)',
        },
        { name: 'logistics-object', in: 'query', required: false, schema: { type: 'string', format: 'uri' } },
      ],
      responses: { '200': { description: 'The matching action requests', content: jsonLd(ref('CollectionDocument')) } },
    },
  },
  '/logistics-events': {
    post: {
      tags: ['Logistics Events'],
      summary: 'Post Logistics Events for several objects at once',
      description: 'Each event names its object (eventFor); the answer tells per event whether it was stored',
      operationId: 'createLogisticsEvents',
      requestBody: {
        required: true,
        content: { ...jsonLd(ref('JsonLdDocument')), 'text/turtle': { schema: { type: 'string' } } },
      },
      responses: { '207': { description: 'One status per event', content: jsonLd(ref('MultiStatusDocument')) } },
    },
  },
  '/shapes': {
    get: {
      tags: ['Operations'],
      summary: 'The SHACL shapes every write is checked against, generated from the ONE Record ontologies',
      operationId: 'getShapes',
      responses: {
        '200': { description: 'SHACL shapes as Turtle', content: { 'text/turtle': { schema: { type: 'string' } } } },
        '401': { description: 'Not authenticated' },
        '406': { description: 'Turtle is not acceptable' },
      },
    },
  },
  '/internal/logistics-objects': {
    get: {
      tags: ['Operations'],
      summary: 'INTERNAL: Logistics Objects held, most recently changed first',
      description: 'From the in-memory index, for the web console; `types` counts every object by most specific type',
      operationId: 'listLogisticsObjects',
      parameters: [
        {
          name: 'type',
          in: 'query',
          required: false,
          schema: { type: 'string' },
          description: 'most specific type: an IRI, cargo:Piece or Piece',
        },
        {
          name: 'id',
          in: 'query',
          required: false,
          schema: { type: 'string' },
          description: 'part of the object IRI (any case)',
        },
        { name: 'changed-after', in: 'query', required: false, schema: { type: 'string', format: 'date-time' } },
        {
          name: 'limit',
          in: 'query',
          required: false,
          schema: { type: 'integer', minimum: 0, maximum: 1000, default: 50 },
        },
        { name: 'skip', in: 'query', required: false, schema: { type: 'integer', minimum: 0, default: 0 } },
      ],
      responses: {
        '200': { description: 'The matching objects', content: { 'application/json': { schema: ref('ObjectList') } } },
      },
    },
  },
  '/console': {
    get: {
      ...publicOperation,
      tags: ['Operations'],
      summary: 'The web console (a page; its scripts call this API with the token signed in with)',
      operationId: 'getConsole',
      responses: {
        '200': { description: 'HTML', content: { 'text/html': { schema: { type: 'string' } } } },
        '304': { description: 'Not modified (ETag)' },
      },
    },
  },
  '/internal/moves': {
    get: {
      tags: ['Operations'],
      summary: 'INTERNAL: Logistics Objects marked as moved',
      operationId: 'listMoves',
      responses: {
        '200': {
          description: 'Every move',
          content: { 'application/json': { schema: { type: 'array', items: ref('Move') } } },
        },
      },
    },
  },
  '/internal/moves/{logisticsObjectId}': {
    get: {
      tags: ['Operations'],
      summary: 'INTERNAL: Where a moved Logistics Object went',
      operationId: 'getMove',
      parameters: [pathParam('logisticsObjectId')],
      responses: { '200': { description: 'The move', content: { 'application/json': { schema: ref('Move') } } } },
    },
    put: {
      tags: ['Operations'],
      summary: 'INTERNAL: Mark a Logistics Object as moved',
      description: 'Its URL, audit trail and events then answer 301 (permanent) or 302 with Location',
      operationId: 'moveLogisticsObject',
      parameters: [pathParam('logisticsObjectId')],
      requestBody: {
        required: true,
        content: {
          'application/json': {
            schema: {
              type: 'object',
              required: ['location'],
              properties: {
                location: { type: 'string', format: 'uri' },
                permanent: { type: 'boolean', default: true },
              },
            },
          },
        },
      },
      responses: { '200': { description: 'The move', content: { 'application/json': { schema: ref('Move') } } } },
    },
    delete: {
      tags: ['Operations'],
      summary: 'INTERNAL: Undo a move',
      operationId: 'restoreLogisticsObject',
      parameters: [pathParam('logisticsObjectId')],
      responses: { '204': { description: 'The object answers at its own URL again' } },
    },
  },
  '/internal/acl': {
    post: {
      tags: ['Access control'],
      summary: "INTERNAL: Grant access (an acl:Authorization, as IATA's ACL.json)",
      description:
        'acl:agent or acl:agentClass acl:AuthenticatedAgent; acl:accessTo Logistics Objects (acl:Read = GET_LOGISTICS_OBJECT, acl:Write = PATCH_LOGISTICS_OBJECT) or their /logistics-events (acl:Read = GET_LOGISTICS_EVENT, acl:Append = POST_LOGISTICS_EVENT); acl:mode',
      operationId: 'grantAccess',
      requestBody: {
        required: true,
        content: { ...jsonLd(ref('JsonLdDocument')), 'text/turtle': { schema: { type: 'string' } } },
      },
      responses: {
        '201': {
          description: 'Granted; Location names the grant',
          headers: {
            Location: { required: true, schema: { type: 'string', format: 'uri' } },
            Type: { required: true, schema: { type: 'string', format: 'uri' } },
          },
        },
      },
    },
    get: {
      tags: ['Access control'],
      summary: 'INTERNAL: Grants naming an object and/or an agent',
      operationId: 'listGrants',
      parameters: [
        { name: 'object', in: 'query', required: false, schema: { type: 'string', format: 'uri' } },
        { name: 'agent', in: 'query', required: false, schema: { type: 'string', format: 'uri' } },
      ],
      responses: {
        '200': {
          description: 'The grants as acl:Authorization nodes in an api:Collection',
          content: jsonLd(ref('CollectionDocument')),
        },
      },
    },
    delete: {
      tags: ['Access control'],
      summary:
        'INTERNAL: Withdraw what grants give an agent (or anyone) on an object (or every object), and what was delegated onward from it',
      operationId: 'withdrawGrants',
      parameters: [
        { name: 'object', in: 'query', required: false, schema: { type: 'string', format: 'uri' } },
        { name: 'agent', in: 'query', required: false, schema: { type: 'string', format: 'uri' } },
      ],
      responses: { '204': { description: 'Withdrawn' } },
    },
  },
  '/internal/acl/{grantId}': {
    get: {
      tags: ['Access control'],
      summary: 'INTERNAL: One grant',
      operationId: 'getGrant',
      parameters: [pathParam('grantId')],
      responses: {
        '200': {
          description: "The grant's acl:Authorization nodes and bookkeeping",
          content: jsonLd(ref('JsonLdDocument')),
        },
      },
    },
    delete: {
      tags: ['Access control'],
      summary: 'INTERNAL: Withdraw a grant and every grant derived from it',
      operationId: 'withdrawGrant',
      parameters: [pathParam('grantId')],
      responses: { '204': { description: 'Withdrawn' } },
    },
  },
  '/internal/access': {
    get: {
      tags: ['Access control'],
      summary:
        'INTERNAL: Explain access: which permissions an agent holds on an object, and the chain of grants and delegations behind each',
      operationId: 'explainAccess',
      parameters: [
        { name: 'object', in: 'query', required: true, schema: { type: 'string', format: 'uri' } },
        { name: 'agent', in: 'query', required: false, schema: { type: 'string', format: 'uri' } },
      ],
      responses: {
        '200': {
          description: 'Per permission: held, and its sources',
          content: { 'application/json': { schema: { type: 'object', required: ['object', 'agent', 'permissions'] } } },
        },
      },
    },
  },
  '/sparql': {
    get: {
      tags: ['Operations'],
      summary: 'INTERNAL: SPARQL 1.1 query, read-only (W3C SPARQL 1.1 Protocol)',
      description: 'A browser (Accept: text/html, no query) gets the query page, without a token',
      operationId: 'sparqlQuery',
      parameters: [{ name: 'query', in: 'query', required: false, schema: { type: 'string' } }, ...sparqlDataset],
      responses: sparqlAnswer({ 'text/html': text }),
    },
    post: {
      tags: ['Operations'],
      summary: 'INTERNAL: SPARQL 1.1 query as a form or an application/sparql-query body',
      operationId: 'sparqlQueryPost',
      parameters: sparqlDataset,
      requestBody: {
        required: true,
        content: {
          'application/sparql-query': text,
          'application/x-www-form-urlencoded': {
            schema: {
              type: 'object',
              required: ['query'],
              properties: { query: { type: 'string' }, view: { type: 'string' } },
            },
          },
        },
      },
      responses: sparqlAnswer(),
    },
  },
  '/internal/notifications': {
    get: {
      tags: ['Notifications'],
      summary: 'INTERNAL: Notifications this server received',
      description: 'As an api:Collection in arrival order, each stored once (by @id or Idempotency-Key)',
      operationId: 'listReceivedNotifications',
      parameters: receivedNotificationQuery,
      responses: {
        '200': {
          description: 'The matching notifications',
          content: { ...jsonLd(ref('CollectionDocument')), ...rdfText },
        },
      },
    },
  },
  '/internal/notifications/receipts': {
    get: {
      tags: ['Notifications'],
      summary: 'INTERNAL: What this server noted when each notification arrived (sender, time, arrival number)',
      description: 'The same notifications, order and pages as /internal/notifications, as JSON, for the web console',
      operationId: 'listNotificationReceipts',
      parameters: receivedNotificationQuery,
      responses: {
        '200': {
          description: 'The matching receipts',
          content: { 'application/json': { schema: ref('ReceiptList') } },
        },
      },
    },
  },
  '/internal/outbox/queues': {
    get: {
      tags: ['Operations'],
      summary: 'INTERNAL: Notification queues with something to deliver (one per subscriber and topic)',
      operationId: 'listOutboxQueues',
      responses: {
        '200': {
          description: 'The queues',
          content: {
            'application/json': {
              schema: {
                type: 'object',
                required: ['queues'],
                properties: { queues: { type: 'array', items: ref('OutboxQueue') } },
              },
            },
          },
        },
      },
    },
  },
  '/internal/outbox/dead-letters': {
    get: {
      tags: ['Operations'],
      summary: 'INTERNAL: Notifications given up on (retry window over, 410 Gone, refused address)',
      operationId: 'listDeadLetters',
      responses: {
        '200': {
          description: 'The dead letters, oldest first',
          content: {
            'application/json': {
              schema: {
                type: 'object',
                required: ['deadLetters'],
                properties: { deadLetters: { type: 'array', items: ref('DeadLetter') } },
              },
            },
          },
        },
      },
    },
  },
  '/internal/outbox/dead-letters/replay': {
    post: {
      tags: ['Operations'],
      summary: 'INTERNAL: Put dead letters back in their queues',
      operationId: 'replayDeadLetters',
      parameters: [
        {
          name: 'notification',
          in: 'query',
          required: false,
          schema: { type: 'array', items: { type: 'string', format: 'uri' } },
          style: 'form',
          explode: true,
          description: 'the dead letters to replay (default: all)',
        },
      ],
      responses: {
        '200': {
          description: 'How many were replayed',
          content: {
            'application/json': {
              schema: {
                type: 'object',
                required: ['replayed'],
                properties: { replayed: { type: 'integer', minimum: 0 } },
              },
            },
          },
        },
      },
    },
  },
  '/internal/remote-subscriptions': {
    get: {
      tags: ['Subscriptions'],
      summary: 'INTERNAL: Subscriptions this server holds at other servers',
      operationId: 'listRemoteSubscriptions',
      responses: {
        '200': {
          description: 'Every one, oldest first',
          content: {
            'application/json': {
              schema: {
                type: 'object',
                required: ['subscriptions'],
                properties: { subscriptions: { type: 'array', items: ref('RemoteSubscription') } },
              },
            },
          },
        },
      },
    },
    post: {
      tags: ['Subscriptions'],
      summary: 'INTERNAL: Subscribe this server to a topic at another server',
      description:
        'Posts the Subscription this server wants to {publisher}/subscriptions and keeps the SubscriptionRequest it answers',
      operationId: 'createRemoteSubscription',
      requestBody: {
        required: true,
        content: {
          'application/json': {
            schema: {
              type: 'object',
              required: ['topic'],
              properties: {
                topic: {
                  type: 'string',
                  format: 'uri',
                  description: 'a Logistics Object IRI, or a Logistics Object class IRI',
                },
                topicType: {
                  type: 'string',
                  description: 'LOGISTICS_OBJECT_IDENTIFIER (default) or LOGISTICS_OBJECT_TYPE',
                },
                publisher: {
                  type: 'string',
                  format: 'uri',
                  description: "base URL of the publisher (default: the topic object's origin)",
                },
                sendLogisticsObjectBody: { type: 'boolean' },
                notifyRequestStatusChange: { type: 'boolean' },
              },
            },
          },
        },
      },
      responses: {
        '201': {
          description: 'Subscribed',
          headers: { Location: { required: true, schema: { type: 'string', format: 'uri' } } },
          content: { 'application/json': { schema: ref('RemoteSubscription') } },
        },
        '502': { description: 'The publisher could not be reached or did not create a SubscriptionRequest' },
      },
    },
  },
  '/idp/token': {
    post: {
      ...publicOperation,
      tags: ['Identity provider'],
      summary: 'Embedded identity provider: client-credentials token',
      operationId: 'issueToken',
      requestBody: {
        required: true,
        content: {
          'application/x-www-form-urlencoded': {
            schema: {
              type: 'object',
              required: ['grant_type'],
              properties: {
                grant_type: { const: 'client_credentials' },
                client_id: { type: 'string' },
                client_secret: { type: 'string' },
              },
            },
          },
        },
      },
      responses: {
        '200': {
          description: "A signed JWT for the client's logistics agent",
          content: { 'application/json': { schema: ref('TokenResponse') } },
        },
        '400': {
          description: 'Unsupported grant or malformed request',
          content: { 'application/json': { schema: ref('OAuthError') } },
        },
        '401': {
          description: 'Unknown client or wrong secret',
          content: { 'application/json': { schema: ref('OAuthError') } },
        },
      },
    },
  },
  '/idp/.well-known/jwks.json': {
    get: {
      ...publicOperation,
      tags: ['Identity provider'],
      summary: 'Embedded identity provider: public keys',
      operationId: 'getJwks',
      responses: {
        '200': {
          description: 'The key set (with x5c and x5t)',
          content: { 'application/json': { schema: ref('JsonWebKeySet') } },
        },
      },
    },
  },
  '/health/live': {
    get: {
      ...publicOperation,
      tags: ['Operations'],
      summary: 'Liveness probe',
      operationId: 'getLiveness',
      responses: {
        '200': { description: 'The process answers', content: { 'application/json': { schema: ref('Health') } } },
      },
    },
  },
  '/health/ready': {
    get: {
      ...publicOperation,
      tags: ['Operations'],
      summary: 'Readiness probe',
      operationId: 'getReadiness',
      responses: {
        '200': {
          description: 'The store is loaded: traffic is served',
          content: { 'application/json': { schema: ref('Health') } },
        },
        '503': {
          description: 'Starting (store loading) or stopping',
          content: { 'application/json': { schema: ref('Health') } },
        },
      },
    },
  },
  '/metrics': {
    get: {
      security: [{ metricsToken: [] }],
      tags: ['Operations'],
      summary: 'Prometheus metrics',
      description: 'On the main port only with metrics.token configured (bearer); without a token on metrics.port',
      operationId: 'getMetrics',
      responses: { '200': { description: 'Prometheus text format', content: metricsText }, ...apiErrors(401) },
    },
  },
  '/openapi.json': {
    get: {
      ...publicOperation,
      tags: ['Operations'],
      summary: 'This description, as JSON',
      operationId: 'getOpenApiJson',
      responses: {
        '200': {
          description: 'OpenAPI 3.1',
          content: { 'application/json': { schema: { type: 'object', required: ['openapi', 'paths'] } } },
        },
      },
    },
  },
  '/openapi.yaml': {
    get: {
      ...publicOperation,
      tags: ['Operations'],
      summary: 'This description, as YAML',
      operationId: 'getOpenApiYaml',
      responses: {
        '200': { description: 'OpenAPI 3.1', content: { 'application/yaml': { schema: { type: 'string' } } } },
      },
    },
  },
  '/openapi': {
    get: {
      ...publicOperation,
      tags: ['Operations'],
      summary: 'This description as a web page',
      operationId: 'getOpenApiPage',
      responses: { '200': { description: 'HTML', content: { 'text/html': { schema: { type: 'string' } } } } },
    },
  },
};

/** OpenAPI 3.0 schema → 3.1 (JSON Schema 2020-12): `nullable` becomes a `null` type. */
function upgradeSchemas(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(upgradeSchemas);
  if (typeof node !== 'object' || node === null) return node;
  const out: Json = {};
  for (const [key, value] of Object.entries(node)) if (key !== 'nullable') out[key] = upgradeSchemas(value);
  const nullable = (node as Json).nullable === true;
  if (nullable && typeof out.type === 'string') out.type = [out.type, 'null'];
  return out;
}

/**
 * An operation with every api:Error answer a route can give; an IATA operation also gets our
 * success bodies (`successBodies`), while ours keep theirs.
 */
function adaptOperation(operation: Json, successBodies?: Record<string, Json>): Json {
  const responses: Record<string, Json> = {};
  for (const [status, response] of Object.entries((operation.responses ?? {}) as Record<string, Json>)) {
    const code = Number(status);
    if (code >= 400) responses[status] = { description: response.description, content: jsonLd(ref('ApiError')) };
    else if (!successBodies) responses[status] = response;
    else if (successBodies[status]) responses[status] = { ...response, content: successBodies[status] };
    else {
      const { content: _dropped, ...rest } = response;
      responses[status] = rest;
    }
  }
  for (const status of Object.keys(ERROR_TITLES))
    responses[status] ??= { description: ERROR_TITLES[Number(status)], content: jsonLd(ref('ApiError')) };
  return { ...operation, responses };
}

export async function buildOpenApi(baseUrl: string): Promise<OpenApiDocument> {
  // The YAML parser is loaded with the first request for the description, not at start.
  const { parse } = await import('yaml');
  const iata = parse(readFileSync(IATA_FILE, 'utf8')) as Json & {
    paths: Record<string, Record<string, Json>>;
    components: { schemas: Record<string, unknown> };
  };
  const paths: Record<string, Record<string, Json>> = {};
  for (const [path, operations] of Object.entries(FROM_IATA)) {
    paths[path] = {};
    for (const [method, bodies] of Object.entries(operations))
      paths[path][method] = upgradeSchemas(adaptOperation(iata.paths[path][method], bodies)) as Json;
  }
  const getObject = paths['/logistics-objects/{logisticsObjectId}'].get as { parameters: Json[] };
  getObject.parameters.push({
    name: 'revision',
    in: 'query',
    required: false,
    schema: { type: 'integer', minimum: 1 },
    description: 'a revision number instead of the latest (our extension)',
  });
  for (const [path, operations] of Object.entries(SERVER_PATHS)) {
    paths[path] = {};
    for (const [method, operation] of Object.entries(operations))
      paths[path][method] = operation.security ? operation : adaptOperation(operation);
  }
  const schemas = { ...(upgradeSchemas(iata.components.schemas) as Record<string, unknown>), ...SERVER_SCHEMAS };
  // IATA's description refers to classes (code lists, Thing) it never defines: described as open objects.
  for (const [, name] of JSON.stringify(schemas).matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)) {
    schemas[name] ??= { type: 'object', description: `${name} (referred to by IATA's description, not defined there)` };
  }
  return {
    openapi: '3.1.0',
    info: {
      ...(iata.info as Json),
      title: 'ONE Record server API',
      description:
        'The ONE Record API (IATA, version 2.3.0) as this server implements it, with its own routes (operations, identity provider, action request list, bulk events). Answers are compacted JSON-LD; requests may use any JSON-LD form or Turtle.',
    },
    servers: [{ url: baseUrl }],
    tags: [
      ...(iata.tags as Json[]).filter((t) =>
        Object.values(paths).some((ops) =>
          Object.values(ops).some((op) => (op.tags as string[] | undefined)?.includes(t.name as string)),
        ),
      ),
      { name: 'Identity provider' },
      { name: 'Operations' },
    ],
    security: [{ bearer: [] }],
    paths,
    components: {
      schemas,
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT',
          description: 'A JWT from the embedded or a trusted identity provider, carrying logistics_agent_uri',
        },
        metricsToken: { type: 'http', scheme: 'bearer', description: 'metrics.token from the configuration' },
      },
    },
  };
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * A page listing every operation with its parameters and answers; links to the JSON and YAML forms.
 * Its empty icon keeps browsers from asking for /favicon.ico, which would be a 401 like any path without a token.
 */
function renderPage(doc: OpenApiDocument): string {
  const sections = Object.entries(doc.paths).flatMap(([path, operations]) =>
    Object.entries(operations).map(([method, op]) => {
      const parameters = ((op.parameters ?? []) as Json[])
        .map(
          (p) =>
            `<li><code>${escapeHtml(String(p.name))}</code> (${escapeHtml(String(p.in))}${p.required ? ', required' : ''})</li>`,
        )
        .join('');
      const responses = Object.entries((op.responses ?? {}) as Record<string, Json>)
        .map(
          ([status, r]) =>
            `<li><b>${status}</b> ${escapeHtml(String(r.description ?? ''))} <small>${Object.keys(
              (r.content ?? {}) as Json,
            )
              .map(escapeHtml)
              .join(', ')}</small></li>`,
        )
        .join('');
      return `<section id="${escapeHtml(String(op.operationId ?? `${method}-${path}`))}"><h2><span class="m">${method.toUpperCase()}</span> <code>${escapeHtml(path)}</code></h2><p>${escapeHtml(String(op.summary ?? ''))}</p>${parameters ? `<h3>Parameters</h3><ul>${parameters}</ul>` : ''}<h3>Answers</h3><ul>${responses}</ul></section>`;
    }),
  );
  const info = doc.info as Json;
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>${escapeHtml(String(info.title))}</title><style>body{font-family:sans-serif;max-width:60rem;margin:auto;padding:1rem}section{border-top:1px solid #ccc}.m{display:inline-block;min-width:4.5rem;color:#fff;background:#345;padding:0 .3rem}</style></head><body><h1>${escapeHtml(String(info.title))} <small>${escapeHtml(String(info.version))}</small></h1><p>${escapeHtml(String(info.description))}</p><p>Machine-readable: <a href="openapi.json">openapi.json</a>, <a href="openapi.yaml">openapi.yaml</a> (OpenAPI ${escapeHtml(String(doc.openapi))})</p>${sections.join('')}</body></html>`;
}

/** `/openapi.json`, `/openapi.yaml` and `/openapi` (a page), public; built on first request. */
export function openApiRoutes(baseUrl: string): Router {
  const router = express.Router();
  let built: Promise<{ json: string; yaml: string; html: string }> | undefined;
  const forms = () =>
    (built ??= (async () => {
      const doc = await buildOpenApi(baseUrl);
      const { stringify } = await import('yaml');
      return {
        json: JSON.stringify(doc),
        yaml: stringify(doc, { aliasDuplicateObjects: false }),
        html: renderPage(doc),
      };
    })());
  router.get('/openapi.json', async (_req, res) => {
    res.type('application/json').send((await forms()).json);
  });
  router.get('/openapi.yaml', async (_req, res) => {
    res.type('application/yaml').send((await forms()).yaml);
  });
  router.get('/openapi', async (_req, res) => {
    res.type('text/html').send((await forms()).html);
  });
  return router;
}
