import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { z } from 'zod';
import type { callbackSchema, clientSchema, partnerSchema, trustedIssuerSchema } from './config/fields.js';
import { configSchema } from './config/schema.js';
import { settings, STRING_LIST } from './config/setting-docs.js';

/**
 * Loading the configuration: defaults, file, env vars and overrides, checked against the one schema
 * (src/config/schema.ts). Everything the rest of the code needs about configuration is exported here.
 */
export { LOG_LEVELS } from './config/fields.js';
export { configSchema } from './config/schema.js';
export {
  configurationTable,
  envVarName,
  readmeConfigurationTable,
  type SettingDoc,
  settings,
  withConfigurationTable,
} from './config/setting-docs.js';

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
  for (const part of parts.slice(0, -1)) {
    node[part] ??= {};
    node = node[part] as Record<string, unknown>;
  }
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
