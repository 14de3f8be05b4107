import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { z } from 'zod';

/**
 * The configuration, declared once: the TypeScript type, the checks, the defaults, the env var
 * names and the README table (`npm run config:table`) all come from this schema. Every object is
 * strict, so a mistyped key stops the start instead of being ignored.
 *
 * Env var names are derived from the path: `limits.bodyBytes` is `LIMITS_BODY_BYTES`, unless a
 * setting names its own (`env` in its meta). Arrays and objects are given in env vars as JSON; a
 * list of text also comma-separated.
 */
const integer = (min: number, max = Number.MAX_SAFE_INTEGER) => z.number().int().min(min).max(max);
const httpUrl = z.url({ protocol: /^https?$/ });
const iri = z.url();

const clientSchema = z.strictObject({
  id: z.string().min(1),
  secret: z.string().min(1),
  /** URI of the logistics agent the tokens of this client speak for. */
  agent: iri,
});

const trustedIssuerSchema = z.strictObject({
  issuer: z.string().min(1),
  jwksUrl: httpUrl,
  /** When set, tokens must carry this audience. */
  audience: z.string().min(1).optional(),
});

/** Where notifications for an organisation go, when not to `{origin of the organisation}/notifications`. */
const callbackSchema = z.strictObject({ organization: iri, url: httpUrl });

/** What a browser sends in `Origin` (scheme, host, port if not the default; no path), or `*`: any origin. */
const originSchema = z
  .string()
  .refine((text) => text === '*' || (URL.canParse(text) && new URL(text).origin === text), {
    message:
      'expected an origin as a browser sends it (`https://app.example.com`, lowercase, no path or trailing slash) ' +
      'or `*`',
  });

/** A partner server asked, when an object of one of `types` (or their subclasses; none: any) is created, which subscription it wants. */
const partnerSchema = z.strictObject({ url: httpUrl, types: z.array(iri).default([]) });

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

export const configSchema = z.strictObject({
  host: z.string().min(1).default('127.0.0.1').meta({ description: 'interface to listen on' }),
  port: integer(0, 65535).default(8080).meta({ description: 'port to listen on (0: any free port)' }),
  // Under a second, Node would announce `timeout=0`, which clients take as "do not reuse".
  keepAliveTimeoutMs: integer(1000).default(65_000).meta({
    description:
      "how long an idle kept-alive connection of a client stays open (announced in `Keep-Alive: timeout=`): longer than the idle timeout of a load balancer in front (60 s is common), so that the balancer closes first, and than the pauses between a publisher's bursts of notifications, so that its connections are reused",
  }),
  baseUrl: httpUrl
    .optional()
    .meta({
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
  identityProvider: z
    .strictObject({
      enabled: z.boolean().default(true).meta({ description: 'serve the embedded identity provider under `/idp`' }),
      tokenLifetimeSeconds: integer(1).default(3600).meta({ description: 'lifetime of issued tokens' }),
      clients: z
        .array(clientSchema)
        .default([])
        .meta({
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
            'time a whole request this server makes may take (key sets of trusted issuers, notifications, subscriptions)',
        }),
      keySetRefetchSeconds: integer(1)
        .default(60)
        .meta({
          description:
            "a trusted issuer's key set is fetched again for a token with an unknown `kid` at most this often (key rotation)",
        }),
      allowPrivateAddresses: z
        .boolean()
        .default(false)
        .meta({
          description:
            'let outbound calls (notifications, subscriptions) reach loopback, private, link-local and metadata addresses; for tests and local demos',
        }),
      connectTimeoutMs: integer(1).default(5000).meta({ description: 'time an outbound call may take to connect' }),
      clientCredentials: z
        .strictObject({ tokenUrl: httpUrl, clientId: z.string().min(1), clientSecret: z.string().min(1) })
        .optional()
        .meta({
          description:
            '`{tokenUrl, clientId, clientSecret}`: outbound calls carry a token from this provider (client-credentials grant) instead of one signed by the embedded provider',
        }),
    })
    .prefault({}),
  notifications: z
    .strictObject({
      webhookUrl: httpUrl
        .optional()
        .meta({
          description: 'received notifications are forwarded (POST, JSON-LD, `Idempotency-Key`) to this internal URL',
        }),
      retentionDays: integer(0)
        .default(0)
        .meta({
          description:
            'received notifications older than this many days are removed (checked hourly; one sent again after that is stored again); 0 keeps them all',
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
            'notifications being sent at once while API requests are being answered: requests come first, delivery goes on at this pace',
        }),
      sendsPerSecondWhileServing: integer(1)
        .default(200)
        .meta({
          description:
            'notifications started per second, at most, while API requests are being answered; the rest go in the pauses',
        }),
      queueInFlight: integer(1)
        .default(8)
        .meta({
          description:
            'notifications of one subscriber queue being sent at once, in order on one kept-alive connection (HTTP/1.1 pipelining); 1 waits for each answer',
        }),
      queueWindow: integer(1)
        .default(256)
        .meta({
          description:
            'notifications of one subscriber queue kept in memory; the rest of a backlog stays in the store and is read as the queue drains',
        }),
      callbacks: z
        .array(callbackSchema)
        .default([])
        .meta({
          description:
            '`{organization, url}`: where notifications for an organisation go instead of `{its origin}/notifications`',
        }),
    })
    .prefault({}),
  partners: z
    .array(partnerSchema)
    .default([])
    .meta({
      description:
        '`{url, types}`: partner servers asked `GET {url}/subscriptions` when an object of one of `types` (default any) is created',
    }),
  decisionPolicy: z
    .enum(['auto', 'all', 'manual'])
    .default('auto')
    .meta({ description: 'change requests: `auto`, `all` or `manual` (see "What the server does")' }),
  hideForbidden: z
    .boolean()
    .default(false)
    .meta({ description: 'answer 404 instead of 403 when a caller may not see a resource' }),
  http: z
    .strictObject({
      cors: z
        .strictObject({
          allowedOrigins: z
            .array(originSchema)
            .default([])
            .meta({
              env: 'CORS_ALLOWED_ORIGINS',
              description:
                'origins (`https://app.example.com`) whose web pages may call the API from a browser (CORS, ' +
                'docs/cors.md); `*`: any origin; none: CORS is off. In the env var, comma-separated or a JSON list',
            }),
        })
        .prefault({}),
    })
    .prefault({}),
  limits: z
    .strictObject({
      bodyBytes: integer(1)
        .default(1024 * 1024)
        .meta({ description: 'request body limit (413 above)' }),
      triples: integer(1).default(10_000).meta({ description: 'triples after expansion (400 above)' }),
      depth: integer(1).default(32).meta({ description: 'JSON nesting depth (400 above)' }),
      iriLength: integer(16).default(2048).meta({ description: 'IRI length (400 above)' }),
      contextTerms: integer(1)
        .default(2000)
        .meta({
          description:
            'JSON-LD term definitions, each `@context` counting its own terms and those of the contexts around it (400 above)',
        }),
      jsonLdMillis: integer(1)
        .default(3000)
        .meta({
          description:
            'time jsonld.js may spend on one body that the fast reader leaves to it; it runs on a worker thread and is stopped past this (400)',
        }),
      perCaller: z
        .strictObject({
          requestsInFlight: integer(1)
            .default(64)
            .meta({
              description:
                'requests of one caller (agent) the server works on at once; past it 429 with `Retry-After` (internal actors are not counted; docs/operations.md, "Fair share")',
            }),
          bodyBytesInFlight: integer(1)
            .default(8 * 1024 * 1024)
            .meta({
              description:
                'request body bytes of one caller held at once (received, or announced by `Content-Length`, until the answer): a body past it is refused with 429 and `Retry-After`; one body is always taken when the caller has none in flight',
            }),
          jsonLdDocuments: integer(1)
            .default(4)
            .meta({
              description:
                "JSON-LD bodies of one caller at the jsonld.js worker at once (those the fast reader leaves to it): while it has this many there, the caller's next body is refused with 429 and `Retry-After` before it is read",
            }),
        })
        .prefault({}),
    })
    .prefault({}),
  journal: z
    .strictObject({
      snapshotAfterBytes: integer(1)
        .default(64 * 1024 * 1024)
        .meta({
          description:
            'journal size that triggers a snapshot, once the journal is also as large as the last snapshot or reaches `journal.maxReplayBytes`',
        }),
      maxReplayBytes: integer(1)
        .default(96 * 1024 * 1024)
        .meta({
          description:
            'journal size that triggers a snapshot (once past `journal.snapshotAfterBytes`) even when the last snapshot is larger, so that a start after a crash replays at most about this much journal (measured: 96 MB in ~5 s at 100,000 objects) on top of reading the memory image or the snapshot; each such snapshot rewrites the whole store (see "Durability")',
        }),
      fsync: z
        .boolean()
        .default(true)
        .meta({ description: 'fsync each commit; `false` gives up durability (benchmarks only)' }),
    })
    .prefault({}),
  store: z
    .strictObject({
      backend: z
        .enum(['embedded', 'sparql'])
        .default('embedded')
        .meta({
          description:
            '`embedded`: the data directory (journal, snapshots, archive, embedded Oxigraph); `sparql`: a SPARQL 1.1 engine reached at `store.sparql.*` keeps all data (docs/sparql-engine.md)',
        }),
      sparql: z
        .strictObject({
          queryUrl: httpUrl
            .optional()
            .meta({ description: "with `store.backend: sparql`: the engine's SPARQL query endpoint" }),
          updateUrl: httpUrl
            .optional()
            .meta({
              description: "with `store.backend: sparql`: the engine's SPARQL update endpoint (often the same URL)",
            }),
          user: z.string().min(1).optional().meta({ description: 'user for HTTP authentication at the engine' }),
          password: z.string().optional().meta({ description: 'its password' }),
          authScheme: z
            .enum(['basic', 'digest'])
            .default('digest')
            .meta({ description: 'HTTP authentication scheme with `user`/`password`' }),
          token: z
            .string()
            .min(1)
            .optional()
            .meta({ description: 'bearer token for the engine, instead of a user and password' }),
          timeoutMs: integer(1)
            .default(30_000)
            .meta({ description: 'time one request to the engine may take; past it the request answers 503' }),
          sharedWriters: z.boolean().default(false).meta({
            description:
              'other server processes write to the same engine (several behind a load balancer; Virtuoso only): the engine checks that a new object, a change or a decision fills a slot no other process filled or claims (409 otherwise), each commit is announced on a commit feed in the engine that every process follows, and a request waits until its process has seen every commit acknowledged before it arrived (`readYourWrites`; docs/sparql-engine.md, "Several processes"). Off: this process\'s own claims decide, without the cost',
          }),
          readYourWrites: z.boolean().default(true).meta({
            description:
              'with `sharedWriters`: a request waits until its process has read the commit feed once after the request arrived (every write acknowledged before, through any process, is then seen; costs the engine one small query per ~2 ms of requests per process). Off: a process may answer from what it knew up to `feedPollMillis` ago (with a balancer that keeps each client on one process, a client still reads its own writes)',
          }),
          feedPollMillis: integer(1)
            .default(50)
            .meta({
              description:
                'with `sharedWriters`: how often a process reads the commit feed for the commits of the others',
            }),
          feedGapWaitMillis: integer(1)
            .default(1_000)
            .meta({
              description:
                'with `sharedWriters`: how long a feed position not filled yet holds back the commits after it, before it is taken for an operation the engine rolled back and skipped',
            }),
          outboxGapWaitMillis: integer(0).default(5_000).meta({
            description:
              'with `sharedWriters`: how long the delivering process waits for a notification another process numbered before those it has (a write still under way), before it sends the later ones; should it come after, it is sent then, out of order',
          }),
          processDeadAfterMillis: integer(100).default(10_000).meta({
            description:
              'with `sharedWriters`: each process records every fifth of this that it is alive; one not seen for this long is taken for dead, and the others complete the writes it had stored but not applied (until then they hold what those writes change: a change of that revision answers 409)',
          }),
          deliveryLeaseMillis: integer(100).default(10_000).meta({
            description:
              "with `sharedWriters`: one process at a time delivers the notifications, holding a lease in the engine for terms of this length, renewed halfway through; when it dies another takes over within 1.5 terms (the processes' clocks must agree within a quarter term, at most 1 s)",
          }),
          feedRetentionMinutes: integer(1)
            .default(30)
            .meta({
              description:
                'with `sharedWriters`: feed entries older than this are removed; longer than any process takes to start (it follows the feed from when it began reading the engine)',
            }),
        })
        .prefault({}),
      capacityQuads: integer(1)
        .default(8_000_000)
        .meta({
          description:
            'quads the store may hold; a write that would pass it is refused with 507 and reads go on (see "Capacity")',
        }),
      memoryReserveBytes: integer(0, 2 ** 32 - 1)
        .default(512 * 1024 * 1024)
        .meta({
          description:
            "WASM memory (4 GiB in all) kept free for queries, snapshots and the growth of Oxigraph's tables: a write that would cut into it is refused with 507, and a data directory that cannot load with half of it free stops the start",
        }),
      compactAfterDeletedQuads: integer(0).default(1_000_000).meta({
        description:
          'quads deleted since the last compaction from which the store is compacted (copied into a fresh WASM memory while it serves: Oxigraph never reuses the memory of deleted quads), once they are also half the quads held, or a tenth when the memory is nearly full; 0: never (see "Capacity")',
      }),
      memoryImage: z.boolean().default(true).meta({
        description:
          'write the hot index\'s WASM memory to `index.image` in the data directory (as large as that memory) at each snapshot (see `store.imageAtSnapshot`) and on a clean stop, so that a start reads it back instead of loading the snapshot, then replays the journal after it; a start takes it only if it reflects the newest snapshot (see "Capacity")',
      }),
      imageAtSnapshot: z.boolean().default(true).meta({
        description:
          'with `store.memoryImage`, write the image at every snapshot too, so that a start after a crash reads it: the request thread then waits while the memory is copied at the snapshot (~0.07 s a GB here), and the copy takes as much memory until it is written; false: only a clean stop writes one',
      }),
      memoryImageMinQuads: integer(0).default(250_000).meta({
        description:
          "the fewest quads the store must hold for `store.memoryImage` to write an image (at a snapshot or a clean stop): below it a start loads the snapshot in about a second, while an image reads and writes the whole WASM memory, at least `store.memoryReserveBytes` (an empty store's 0.6 GB took 2 s on a 2-core test machine); 0: at any size",
      }),
    })
    .prefault({}),
  cache: z
    .strictObject({
      serializedRevisions: integer(0).default(20_000).meta({ description: 'serialised revisions kept in memory' }),
      verifiedTokens: integer(1).default(10_000).meta({ description: 'verified tokens kept until they expire' }),
    })
    .prefault({}),
  validation: z
    .strictObject({
      enabled: z
        .boolean()
        .default(true)
        .meta({
          description:
            'check every write against the SHACL shapes under `shapes/` (see "Data-model validation"); `false` only for benchmarks',
        }),
      strict: z.boolean().default(false).meta({ description: 'also refuse properties the ontologies do not declare' }),
    })
    .prefault({}),
  sparql: z
    .strictObject({
      timeBudgetMillis: integer(1)
        .default(30_000)
        .meta({
          description:
            'time one SPARQL query may run; past it the query worker is stopped and replaced, and the query answers 503',
        }),
      maxRows: integer(1)
        .default(100_000)
        .meta({
          description: 'rows of a SELECT answer (triples of a CONSTRUCT/DESCRIBE answer); more are cut off and flagged',
        }),
      freshnessWaitMillis: integer(0)
        .default(1000)
        .meta({
          description:
            'longest a SPARQL query waits for the query replica to hold every write acknowledged before it; then it answers from what the replica holds, with the `SPARQL-Replica-Lag` header saying how far behind',
        }),
      openToPartners: z
        .boolean()
        .default(false)
        .meta({ description: 'let callers other than internal actors query `/sparql`, over what they may read' }),
      historyMaxQuads: integer(0)
        .default(1_000_000)
        .meta({
          description:
            'quads of history (whole revisions before the latest, with their metadata; decided action requests) the SPARQL replica holds for the `revisions` and `audit` views, newest first; older history stays in the archive',
        }),
      memoryLimitBytes: integer(1, 2 ** 32)
        .default(2 ** 32)
        .meta({
          description:
            'WebAssembly memory the SPARQL replica may grow to (its data, and 256 MB kept free for queries; 4 GiB at most): past it the replica is full (see "SPARQL", Memory)',
        }),
      replicaIdleMillis: integer(0).default(600_000).meta({
        description:
          'time without a SPARQL query after which the query replica is stopped, so that writes no longer feed it; the next query starts it again and waits for its copy of the store (docs/sparql.md). `0`: it starts with the server and is never stopped',
      }),
      maxWaiting: integer(0)
        .default(32)
        .meta({
          description:
            'SPARQL queries that may wait for their turn (callers take turns); past it 503 with `Retry-After` (docs/sparql.md, "Limits")',
        }),
      maxWaitingPerCaller: integer(0)
        .default(8)
        .meta({
          description:
            'of those, queries one caller may have waiting; past it 429 with `Retry-After`, so that one caller cannot fill the queue',
        }),
    })
    .prefault({}),
  metrics: z
    .strictObject({
      token: z
        .string()
        .min(16)
        .optional()
        .meta({
          description:
            'turns metrics on and serves `GET /metrics` on the main port to bearers of this token (16 characters or more)',
        }),
      port: integer(0, 65535)
        .optional()
        .meta({
          description:
            'turns metrics on and serves `GET /metrics` (no token) and `/health/*` on this port, for a scraper on a private network',
        }),
      host: z.string().min(1).default('127.0.0.1').meta({ description: 'interface of that metrics port' }),
    })
    .prefault({}),
  shutdown: z
    .strictObject({
      graceMs: integer(0)
        .default(10_000)
        .meta({
          description:
            'on SIGTERM/SIGINT: how long requests in flight may take to finish before their connections are cut',
        }),
    })
    .prefault({}),
  logLevel: z
    .enum(LOG_LEVELS)
    .default('info')
    .meta({
      description: 'least severe log level written: `fatal`, `error`, `warn`, `info`, `debug`, `trace` or `silent`',
    }),
});

/** The configuration as given (file, env, overrides): every key optional. */
export type ConfigInput = z.input<typeof configSchema>;
type Parsed = z.output<typeof configSchema>;
export type Config = Omit<Parsed, 'baseUrl'> & { baseUrl: string };
export type ClientConfig = z.output<typeof clientSchema>;
export type TrustedIssuerConfig = z.output<typeof trustedIssuerSchema>;
export type CallbackConfig = z.output<typeof callbackSchema>;
export type PartnerConfig = z.output<typeof partnerSchema>;
export type DecisionPolicy = Config['decisionPolicy'];
export type Limits = Config['limits'];
export type LogLevel = Config['logLevel'];

type DeepPartial<T> = {
  [K in keyof T]?: T[K] extends unknown[] ? T[K] : T[K] extends object ? DeepPartial<T[K]> : T[K];
};
/** What tests and benchmarks pass to `loadConfig` on top of env and file. */
export type ConfigOverrides = DeepPartial<Config>;

/** A configuration that cannot be used; the message names each bad key and where it came from. */
export class ConfigError extends Error {
  readonly code = 'invalid_configuration';
}

/** One setting of the schema, as the env var reader and the README table see it. */
export interface SettingDoc {
  path: string;
  env: string;
  type: string;
  default: string;
  description: string;
}

/** The parts of a zod schema's definition the walk below reads. */
interface SchemaDef {
  type: string;
  innerType?: z.ZodType;
  defaultValue?: unknown;
  shape?: Record<string, z.ZodType>;
  element?: z.ZodType;
}

/** The type of a list of text settings, which an env var may give comma-separated as well as in JSON. */
const STRING_LIST = 'string array';

interface SettingMeta {
  description?: string;
  defaultText?: string;
  /** An env var name of its own, where users know the setting by another name than its path's. */
  env?: string;
}

export function envVarName(path: string): string {
  return path
    .split('.')
    .map((part) => part.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase())
    .join('_');
}

/** Every leaf setting of the schema, in declaration order (nested objects flattened to dotted paths). */
export function settings(): SettingDoc[] {
  return SETTINGS;
}

/** Walks the schema: wrappers (default, optional, prefault) are looked through, objects flattened. */
function leafSettings(schema: z.ZodType = configSchema, prefix = ''): SettingDoc[] {
  const out: SettingDoc[] = [];
  for (const [key, field] of Object.entries((schema.def as SchemaDef).shape ?? {})) {
    const path = prefix ? `${prefix}.${key}` : key;
    const meta = (field.meta() ?? {}) as SettingMeta;
    let inner = field;
    let defaultValue: unknown;
    for (let def = inner.def as SchemaDef; def.innerType; def = inner.def as SchemaDef) {
      if (def.type === 'default') defaultValue = def.defaultValue;
      inner = def.innerType;
    }
    const { type, element } = inner.def as SchemaDef;
    if (type === 'object') {
      out.push(...leafSettings(inner, path));
      continue;
    }
    const shownDefault = meta.defaultText ?? (defaultValue === undefined ? '' : JSON.stringify(defaultValue));
    const shownType = type === 'array' && element?.def.type === 'string' ? STRING_LIST : type;
    const env = meta.env ?? envVarName(path);
    out.push({ path, env, type: shownType, default: shownDefault, description: meta.description ?? '' });
  }
  return out;
}

const SETTINGS = leafSettings();

/** The README's configuration table, generated from the schema. */
export function configurationTable(): string {
  const rows = settings().map(
    (s) =>
      `| \`${s.path}\` | \`${s.env}\` | ${s.default === '' ? '' : `\`${s.default.replace(/^"(.*)"$/, '$1')}\``} | ${s.description} |`,
  );
  return ['| setting | env var | default | meaning |', '|---|---|---|---|', ...rows].join('\n');
}

const TABLE_START = '<!-- configuration table: generated from src/config.ts by `npm run config:table` -->';
const TABLE_END = '<!-- end of configuration table -->';

/** The configuration table in a README text (between its markers), or undefined. */
export function readmeConfigurationTable(readme: string): string | undefined {
  const start = readme.indexOf(TABLE_START);
  const end = readme.indexOf(TABLE_END);
  return start < 0 || end < start ? undefined : readme.slice(start + TABLE_START.length, end).trim();
}

/** The README text with `table` between the markers (added at the end when missing). */
export function withConfigurationTable(readme: string, table: string): string {
  const block = `${TABLE_START}\n${table}\n${TABLE_END}`;
  const start = readme.indexOf(TABLE_START);
  const end = readme.indexOf(TABLE_END);
  if (start < 0 || end < start) return `${readme.trimEnd()}\n\n${block}\n`;
  return readme.slice(0, start) + block + readme.slice(end + TABLE_END.length);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Deep-merges `layer` onto `base` (objects merge, everything else replaces), noting where each value came from. */
function mergeLayer(
  base: Record<string, unknown>,
  layer: Record<string, unknown>,
  source: string,
  origins: Map<string, string>,
  prefix = '',
): void {
  for (const [key, value] of Object.entries(layer)) {
    if (value === undefined) continue;
    const path = prefix ? `${prefix}.${key}` : key;
    if (isPlainObject(value) && isPlainObject(base[key])) {
      mergeLayer(base[key] as Record<string, unknown>, value, source, origins, path);
      continue;
    }
    base[key] = isPlainObject(value) ? structuredClone(value) : value;
    origins.set(path, source);
  }
}

function setPath(target: Record<string, unknown>, path: string, value: unknown): void {
  const parts = path.split('.');
  let node = target;
  for (const part of parts.slice(0, -1)) node = (node[part] ??= {}) as Record<string, unknown>;
  node[parts[parts.length - 1]] = value;
}

/** Env var text turned into the setting's type; anything unreadable is left as text for the schema to refuse. */
function fromEnvText(text: string, type: string): unknown {
  if (type === 'number') return text.trim() === '' ? text : Number(text);
  if (type === 'boolean')
    return text === 'true' || text === '1' ? true : text === 'false' || text === '0' ? false : text;
  if (type === STRING_LIST && !text.trimStart().startsWith('[')) {
    return text
      .split(',')
      .map((item) => item.trim())
      .filter((item) => item !== '');
  }
  if (type === 'array' || type === 'object' || type === STRING_LIST) {
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  }
  return text;
}

function envLayer(env: NodeJS.ProcessEnv, origins: Map<string, string>): Record<string, unknown> {
  const layer: Record<string, unknown> = {};
  for (const setting of settings()) {
    const text = env[setting.env];
    if (text === undefined || text === '') continue;
    setPath(layer, setting.path, fromEnvText(text, setting.type));
    origins.set(setting.path, `env ${setting.env}`);
  }
  return layer;
}

function readFileLayer(file: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new ConfigError(`configuration file ${file} (CONFIG_FILE) cannot be read: ${(err as Error).message}`);
  }
  if (!isPlainObject(value)) throw new ConfigError(`configuration file ${file} (CONFIG_FILE) must hold a JSON object`);
  return value;
}

/** Where the value at `path` came from: the longest recorded prefix. */
function originOf(path: string, origins: Map<string, string>): string {
  for (let p = path; p; p = p.includes('.') ? p.slice(0, p.lastIndexOf('.')) : '') {
    const origin = origins.get(p);
    if (origin) return origin;
  }
  return 'defaults';
}

function describeIssues(error: z.ZodError, origins: Map<string, string>): string {
  const lines = error.issues.flatMap((issue) => {
    const at = issue.path.map(String).join('.');
    const keys = issue.code === 'unrecognized_keys' ? issue.keys.map((k) => (at ? `${at}.${k}` : k)) : [at || '(root)'];
    return keys.map((key) => {
      const message = issue.code === 'unrecognized_keys' ? 'unknown setting' : issue.message;
      return `  ${key} (from ${originOf(issue.code === 'unrecognized_keys' ? key : at, origins)}): ${message}`;
    });
  });
  return `invalid configuration:\n${lines.join('\n')}`;
}

/**
 * Builds the configuration: defaults, then the JSON file named by CONFIG_FILE (if any), then
 * environment variables, then explicit overrides (used by tests and benchmarks). Throws a
 * ConfigError naming every bad key and its source.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: ConfigOverrides = {}): Config {
  const origins = new Map<string, string>();
  const input: Record<string, unknown> = {};
  if (env.CONFIG_FILE) mergeLayer(input, readFileLayer(env.CONFIG_FILE), `file ${env.CONFIG_FILE}`, origins);
  mergeLayer(input, envLayer(env, origins), 'env', new Map());
  mergeLayer(input, overrides as Record<string, unknown>, 'overrides', origins);
  const parsed = configSchema.safeParse(input);
  if (!parsed.success) throw new ConfigError(describeIssues(parsed.error, origins));
  const config = parsed.data;
  if (config.store.backend === 'sparql' && (!config.store.sparql.queryUrl || !config.store.sparql.updateUrl)) {
    throw new ConfigError(
      'invalid configuration:\n  store.sparql.queryUrl and store.sparql.updateUrl: required with store.backend sparql',
    );
  }
  const baseUrl = (config.baseUrl ?? `http://localhost:${config.port}`).replace(/\/+$/, '');
  return { ...config, baseUrl, dataDir: resolve(config.dataDir) };
}

/** The defaults of every setting (what `npm start` runs with when nothing is configured). */
export const DEFAULTS: Config = loadConfig({});

/** The IRI of the data holder's Organization. */
export function holderIri(config: Config): string {
  return `${config.baseUrl}/logistics-objects/${config.holderId}`;
}

/** The issuer name of the embedded identity provider. */
export function embeddedIssuer(config: Config): string {
  return `${config.baseUrl}/idp`;
}
