import { z } from 'zod';
import { callbackSchema, clientSchema, httpUrl, integer, partnerSchema, trustedIssuerSchema } from './fields.js';

/** The settings of the parties this server deals with: identity providers, outbound calls, notifications, partners. */
export const peerSettings = {
  identityProvider: z
    .strictObject({
      enabled: z.boolean().default(true).meta({ description: 'serve the embedded identity provider under `/idp`' }),
      tokenLifetimeSeconds: integer(1).default(3600).meta({ description: 'lifetime of issued tokens' }),
      clients: z.array(clientSchema).default([]).meta({
        description:
          'extra clients `{id, secret, agent}`; a dev client for the data holder is generated at first start',
      }),
    })
    .prefault({}),
  trustedIssuers: z
    .array(trustedIssuerSchema)
    .default([])
    .meta({ description: 'other identity providers `{issuer, jwksUrl, audience?}` (Keycloak, Azure AD, ...)' }),
  outbound: z
    .strictObject({
      timeoutMs: integer(1)
        .default(5000)
        .meta({
          description:
            'time a whole request this server makes may take (key sets of trusted issuers, notifications, ' +
            'subscriptions)',
        }),
      keySetRefetchSeconds: integer(1)
        .default(60)
        .meta({
          description:
            "a trusted issuer's key set is fetched again for a token with an unknown `kid` at most this often " +
            '(key rotation)',
        }),
      allowPrivateAddresses: z
        .boolean()
        .default(false)
        .meta({
          description:
            'let outbound calls (notifications, subscriptions) reach loopback, private, link-local and ' +
            'metadata addresses; for tests and local demos',
        }),
      connectTimeoutMs: integer(1).default(5000).meta({ description: 'time an outbound call may take to connect' }),
      clientCredentials: z
        .strictObject({ tokenUrl: httpUrl, clientId: z.string().min(1), clientSecret: z.string().min(1) })
        .optional()
        .meta({
          description:
            '`{tokenUrl, clientId, clientSecret}`: outbound calls carry a token from this provider ' +
            '(client-credentials grant) instead of one signed by the embedded provider',
        }),
    })
    .prefault({}),
  notifications: z
    .strictObject({
      webhookUrl: httpUrl.optional().meta({
        description:
          'received notifications are forwarded (POST, JSON-LD, `Idempotency-Key`) to this ' + 'internal URL',
      }),
      retentionDays: integer(0)
        .default(0)
        .meta({
          description:
            'received notifications older than this many days are removed (checked hourly; one sent again ' +
            'after that is stored again); 0 keeps them all',
        }),
    })
    .prefault({}),
  delivery: z
    .strictObject({
      initialBackoffMs: integer(1)
        .default(1000)
        .meta({ description: 'first retry delay of a notification; doubles per attempt, with full jitter' }),
      maxBackoffMs: integer(1)
        .default(60 * 60 * 1000)
        .meta({ description: 'longest retry delay' }),
      retryWindowMs: integer(1)
        .default(72 * 60 * 60 * 1000)
        .meta({ description: 'a notification not delivered within this time (72 h) becomes a dead letter' }),
      maxInFlight: integer(1)
        .default(64)
        .meta({ description: 'notifications being sent at once, over all subscribers' }),
      inFlightWhileServing: integer(1)
        .default(4)
        .meta({
          description:
            'notifications being sent at once while API requests are being answered: requests come first, ' +
            'delivery goes on at this pace',
        }),
      sendsPerSecondWhileServing: integer(1)
        .default(200)
        .meta({
          description:
            'notifications started per second, at most, while API requests are being answered; the rest go in ' +
            'the pauses',
        }),
      queueInFlight: integer(1)
        .default(8)
        .meta({
          description:
            'notifications of one subscriber queue being sent at once, in order on one kept-alive connection ' +
            '(HTTP/1.1 pipelining); 1 waits for each answer',
        }),
      queueWindow: integer(1)
        .default(256)
        .meta({
          description:
            'notifications of one subscriber queue kept in memory; the rest of a backlog stays in the store ' +
            'and is read as the queue drains',
        }),
      callbacks: z
        .array(callbackSchema)
        .default([])
        .meta({
          description:
            '`{organization, url}`: where notifications for an organisation go instead of `{its ' +
            'origin}/notifications`',
        }),
    })
    .prefault({}),
  partners: z
    .array(partnerSchema)
    .default([])
    .meta({
      description:
        '`{url, types}`: partner servers asked `GET {url}/subscriptions` when an object of one of `types` ' +
        '(default any) is created',
    }),
};
