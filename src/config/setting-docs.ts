import type { z } from 'zod';
import { configSchema } from './schema.js';

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
export const STRING_LIST = 'string array';

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
  const rows = settings().map((s) => {
    const shownDefault = s.default === '' ? '' : `\`${s.default.replace(/^"(.*)"$/, '$1')}\``;
    return `| \`${s.path}\` | \`${s.env}\` | ${shownDefault} | ${s.description} |`;
  });
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
