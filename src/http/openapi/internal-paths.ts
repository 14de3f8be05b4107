import { type Json, jsonLd, pathParam, rdfText, ref } from './parts.js';

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

/** The internal routes (`/internal/...`): operating the server, for internal actors. */
export const INTERNAL_PATHS: Record<string, Record<string, Json>> = {
  '/internal/logistics-objects': {
    get: {
      tags: ['Operations'],
      summary: 'INTERNAL: Logistics Objects held, most recently changed first',
      description:
        'From the in-memory index, for the web console; `types` counts every object by most ' + 'specific type',
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
        'acl:agent or acl:agentClass acl:AuthenticatedAgent; acl:accessTo Logistics Objects (acl:Read = ' +
        'GET_LOGISTICS_OBJECT, acl:Write = PATCH_LOGISTICS_OBJECT) or their /logistics-events (acl:Read = ' +
        'GET_LOGISTICS_EVENT, acl:Append = POST_LOGISTICS_EVENT); acl:mode',
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
        'INTERNAL: Withdraw what grants give an agent (or anyone) on an object (or every object), and what ' +
        'was delegated onward from it',
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
        'INTERNAL: Explain access: which permissions an agent holds on an object, and the chain of grants and ' +
        'delegations behind each',
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
      description:
        'The same notifications, order and pages as /internal/notifications, as JSON, for the web ' + 'console',
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
                properties: {
                  queues: { type: 'array', items: ref('OutboxQueue') },
                  delivering: { type: 'boolean', description: 'Whether this process delivers notifications now' },
                  groups: {
                    type: 'array',
                    items: { type: 'integer' },
                    description:
                      'Several processes on one engine: the groups of queues this process delivers (the queues ' +
                      'listed are theirs)',
                  },
                },
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
        'Posts the Subscription this server wants to {publisher}/subscriptions and keeps the ' +
        'SubscriptionRequest it answers',
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
};
