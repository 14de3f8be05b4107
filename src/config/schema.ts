import { z } from 'zod';
import { httpUrl, integer, iri, LOG_LEVELS } from './fields.js';
import { peerSettings } from './peer-settings.js';
import { querySettings } from './query-settings.js';
import { servingSettings } from './serving-settings.js';
import { storageSettings } from './storage-settings.js';

/**
 * The configuration, declared once: type, checks, defaults, env var names and the README table all come from it
 * (docs/operations.md, "Configuration": `limits.bodyBytes` is `LIMITS_BODY_BYTES` unless meta names `env`).
 * Every object is strict, so a mistyped key stops the start instead of being ignored.
 */
export const configSchema = z.strictObject({
  host: z.string().min(1).default('127.0.0.1').meta({ description: 'interface to listen on' }),
  port: integer(0, 65535).default(8080).meta({ description: 'port to listen on (0: any free port)' }),
  // Under a second, Node would announce `timeout=0`, which clients take as "do not reuse".
  keepAliveTimeoutMs: integer(1000)
    .default(65_000)
    .meta({
      description:
        'how long an idle kept-alive connection of a client stays open (announced in `Keep-Alive: timeout=`): ' +
        'longer than the idle timeout of a load balancer in front (60 s is common), so that the balancer ' +
        "closes first, and than the pauses between a publisher's bursts of notifications, so that its " +
        'connections are reused',
    }),
  baseUrl: httpUrl.optional().meta({
    description: 'public base URL; every resource IRI starts with it',
    defaultText: 'http://localhost:<port>',
  }),
  dataDir: z
    .string()
    .min(1)
    .default('./data')
    .meta({ description: 'journal, snapshots, revision archive, identity-provider key' }),
  holderName: z
    .string()
    .min(1)
    .default('ONE Record Server')
    .meta({ description: "name of the data holder's Organization (created at first start)" }),
  holderId: z
    .string()
    .regex(/^[A-Za-z0-9._~-]+$/)
    .default('data-holder')
    .meta({ description: 'id of that Organization: `{baseUrl}/logistics-objects/{holderId}`' }),
  internalAgents: z
    .array(iri)
    .default([])
    .meta({ description: 'agents treated as internal actors, besides the data holder' }),
  ...peerSettings,
  decisionPolicy: z
    .enum(['auto', 'all', 'manual'])
    .default('auto')
    .meta({ description: 'change requests: `auto`, `all` or `manual` (see "What the server does")' }),
  hideForbidden: z
    .boolean()
    .default(false)
    .meta({ description: 'answer 404 instead of 403 when a caller may not see a resource' }),
  ...servingSettings,
  ...storageSettings,
  ...querySettings,
  metrics: z
    .strictObject({
      token: z
        .string()
        .min(16)
        .optional()
        .meta({
          description:
            'turns metrics on and serves `GET /metrics` on the main port to bearers of this token (16 ' +
            'characters or more)',
        }),
      port: integer(0, 65535)
        .optional()
        .meta({
          description:
            'turns metrics on and serves `GET /metrics` (no token) and `/health/*` on this port, for a ' +
            'scraper on a private network',
        }),
      host: z.string().min(1).default('127.0.0.1').meta({ description: 'interface of that metrics port' }),
    })
    .prefault({}),
  shutdown: z
    .strictObject({
      graceMs: integer(0).default(10_000).meta({
        description:
          'on SIGTERM/SIGINT: how long requests in flight may take to finish before their connections are cut',
      }),
    })
    .prefault({}),
  logLevel: z
    .enum(LOG_LEVELS)
    .default('info')
    .meta({
      description:
        'least severe log level written: `fatal`, `error`, `warn`, `info`, `debug`, `trace` or ' + '`silent`',
    }),
});
