import { readFileSync } from 'node:fs';
import type { ParseArgsConfig } from 'node:util';
import type { ApiClient } from './api-client.js';

/** What parseArgs gives a command: its own options, already checked against its option table. */
export type OptionValues = Record<string, string | boolean | string[] | undefined>;

export interface Invocation {
  /** The arguments after the command name. */
  args: string[];
  values: OptionValues;
}

interface CommandText {
  name: string;
  /** Arguments and options, as the usage line shows them. */
  synopsis: string;
  /** What it does, for `--help`; wrapped by hand at about 100 columns. */
  description: string;
  example: string;
  options: NonNullable<ParseArgsConfig['options']>;
  /** How many arguments it takes after its name: [at least, at most]. */
  arity: readonly [number, number];
}

/** A command that works on the data directory beside it. */
export interface LocalCommand extends CommandText {
  remote: false;
  run(invocation: Invocation): Promise<number>;
}

/** A command that talks to a server over HTTP; it also takes `--url` and `--profile`. */
export interface RemoteCommand extends CommandText {
  remote: true;
  run(invocation: Invocation, client: ApiClient): Promise<number>;
}

/** One `onerecord` command. */
export type Command = LocalCommand | RemoteCommand;

export const localCommand = (command: Omit<LocalCommand, 'remote'>): Command => ({ ...command, remote: false });
export const remoteCommand = (command: Omit<RemoteCommand, 'remote'>): Command => ({ ...command, remote: true });

/** A mistake in how the command was called: exit 2 with the command's usage. */
export class UsageError extends Error {}

/** Exit codes: everything went in; the server (or the data) refused something; the command was misused. */
export const EXIT = { ok: 0, refused: 1, usage: 2 } as const;

export function textOption(values: OptionValues, name: string): string | undefined {
  const value = values[name];
  return typeof value === 'string' ? value : undefined;
}

export function listOption(values: OptionValues, name: string): string[] {
  const value = values[name];
  return Array.isArray(value) ? value : [];
}

export const flagOption = (values: OptionValues, name: string): boolean => values[name] === true;

/** A positive whole number given as an option, or undefined when absent. */
export function countOption(values: OptionValues, name: string): number | undefined {
  const raw = textOption(values, name);
  if (raw === undefined) return undefined;
  if (!/^[1-9][0-9]{0,8}$/.test(raw)) throw new UsageError(`--${name} must be a positive whole number`);
  return Number(raw);
}

/** An option that takes one of a few words. */
export function choiceOption<T extends string>(
  values: OptionValues,
  name: string,
  choices: readonly T[],
  fallback: T,
): T {
  const raw = textOption(values, name) ?? fallback;
  if (!(choices as readonly string[]).includes(raw))
    throw new UsageError(`--${name} must be one of ${choices.join(', ')}`);
  return raw as T;
}

/** The text of an input file named on the command line; one that cannot be read is a usage error. */
export function readInputFile(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}
