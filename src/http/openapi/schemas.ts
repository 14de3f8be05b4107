import { ref, typed } from './parts.js';

/** Schemas of what this server answers (compacted JSON-LD with its `@context`). */
export const SERVER_SCHEMAS: Record<string, unknown> = {
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
          'How full the store is (readiness, once the store is open); writes past its capacity are refused ' +
          'with 507',
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
          'of the pending ones, how many are held in memory (the rest is read from the store as the queue ' + 'drains)',
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
