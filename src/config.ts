import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

/** A client of the embedded identity provider (client-credentials grant). */
export interface ClientConfig {
  id: string;
  secret: string;
  /** URI of the logistics agent the tokens of this client speak for. */
  agent: string;
}

/** An identity provider whose tokens this server accepts. */
export interface TrustedIssuerConfig {
  issuer: string;
  jwksUrl: string;
  /** When set, tokens must carry this audience. */
  audience?: string;
}

export type DecisionPolicy = 'auto' | 'all' | 'manual';

export interface Limits {
  bodyBytes: number;
  triples: number;
  depth: number;
  iriLength: number;
  /** Term definitions of a JSON-LD body's contexts, each @context counting those around it too. */
  contextTerms: number;
  /** Time jsonld.js may spend on one body (documents outside the fast path), on its worker thread. */
  jsonLdMillis: number;
}

export interface Config {
  host: string;
  port: number;
  /** Public base URL; every resource IRI starts with it. */
  baseUrl: string;
  dataDir: string;
  /** Display name of the data holder's Organization. */
  holderName: string;
  /** Id (last path segment) of the data holder's Organization Logistics Object. */
  holderId: string;
  /** Agents treated as internal actors besides the data holder. */
  internalAgents: string[];
  identityProvider: {
    enabled: boolean;
    tokenLifetimeSeconds: number;
    /** Extra clients besides the generated dev client of the data holder. */
    clients: ClientConfig[];
  };
  trustedIssuers: TrustedIssuerConfig[];
  decisionPolicy: DecisionPolicy;
  /** Answer 404 instead of 403 when a caller may not read a resource. */
  hideForbidden: boolean;
  limits: Limits;
  journal: {
    /** A snapshot is written once the journal grows past this many bytes. */
    snapshotAfterBytes: number;
    /** fsync every commit; turning it off gives up durability (benchmarks only). */
    fsync: boolean;
  };
  cache: { serializedRevisions: number; verifiedTokens: number };
}

export const DEFAULTS: Config = {
  host: '127.0.0.1',
  port: 8080,
  baseUrl: '',
  dataDir: './data',
  holderName: 'ONE Record Server',
  holderId: 'data-holder',
  internalAgents: [],
  identityProvider: { enabled: true, tokenLifetimeSeconds: 3600, clients: [] },
  trustedIssuers: [],
  decisionPolicy: 'auto',
  hideForbidden: false,
  limits: { bodyBytes: 1024 * 1024, triples: 10_000, depth: 32, iriLength: 2048, contextTerms: 2000, jsonLdMillis: 3000 },
  journal: { snapshotAfterBytes: 64 * 1024 * 1024, fsync: true },
  cache: { serializedRevisions: 20_000, verifiedTokens: 10_000 },
};

type DeepPartial<T> = { [K in keyof T]?: T[K] extends object ? (T[K] extends unknown[] ? T[K] : DeepPartial<T[K]>) : T[K] };
export type ConfigOverrides = DeepPartial<Config>;

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function merge<T>(base: T, override: unknown): T {
  if (!isPlainObject(override) || !isPlainObject(base)) return (override === undefined ? base : override) as T;
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(override)) {
    if (value === undefined || !Object.hasOwn(base, key)) continue;
    out[key] = merge((base as Record<string, unknown>)[key], value);
  }
  return out as T;
}

function envOverrides(env: NodeJS.ProcessEnv): ConfigOverrides {
  const o: ConfigOverrides = {};
  if (env.HOST) o.host = env.HOST;
  if (env.PORT) o.port = Number(env.PORT);
  if (env.BASE_URL) o.baseUrl = env.BASE_URL;
  if (env.DATA_DIR) o.dataDir = env.DATA_DIR;
  if (env.HOLDER_NAME) o.holderName = env.HOLDER_NAME;
  if (env.DECISION_POLICY) o.decisionPolicy = env.DECISION_POLICY as DecisionPolicy;
  if (env.FSYNC) o.journal = { fsync: env.FSYNC !== 'false' && env.FSYNC !== '0' };
  return o;
}

function validate(config: Config): Config {
  if (!Number.isInteger(config.port) || config.port < 0 || config.port > 65535) throw new Error(`invalid port: ${config.port}`);
  if (!['auto', 'all', 'manual'].includes(config.decisionPolicy)) throw new Error(`invalid decisionPolicy: ${config.decisionPolicy}`);
  try {
    new URL(config.baseUrl);
  } catch {
    throw new Error(`invalid baseUrl: ${config.baseUrl}`);
  }
  return config;
}

/**
 * Builds the configuration: defaults, then the JSON file named by CONFIG_FILE (if any),
 * then environment variables, then explicit overrides (used by tests and benchmarks).
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: ConfigOverrides = {}): Config {
  const fromFile: unknown = env.CONFIG_FILE ? JSON.parse(readFileSync(env.CONFIG_FILE, 'utf8')) : {};
  let config = merge(DEFAULTS, fromFile);
  config = merge(config, envOverrides(env));
  config = merge(config, overrides);
  const baseUrl = (config.baseUrl || `http://localhost:${config.port}`).replace(/\/+$/, '');
  return validate({ ...config, baseUrl, dataDir: resolve(config.dataDir) });
}

/** The IRI of the data holder's Organization. */
export function holderIri(config: Config): string {
  return `${config.baseUrl}/logistics-objects/${config.holderId}`;
}

/** The issuer name of the embedded identity provider. */
export function embeddedIssuer(config: Config): string {
  return `${config.baseUrl}/idp`;
}
