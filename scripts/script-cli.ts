// The command line of a script with subcommands (virtuoso/cli.ts, cluster/cli.ts), with the exit
// codes of `onerecord`: 0 done (help asked for goes to stdout, so it pages), 1 failed, 2 misused.
import { parseArgs, type ParseArgsConfig } from 'node:util';

type ScriptOptions = NonNullable<ParseArgsConfig['options']>;

/** A mistake in how the script was called: its usage on stderr, exit 2. */
export class ScriptUsageError extends Error {}

const HELP_OPTION = { help: { type: 'boolean', short: 'h' } } as const;

function parse<O extends ScriptOptions>(options: O) {
  try {
    return parseArgs({ allowPositionals: true, options: { ...options, ...HELP_OPTION } });
  } catch (err) {
    throw new ScriptUsageError((err as Error).message);
  }
}

/** The first argument, which names one of the script's `commands`. */
export function subcommand<C extends string>(positionals: string[], commands: readonly C[]): C {
  const [name] = positionals;
  if (name === undefined) throw new ScriptUsageError('no command given');
  if (!(commands as readonly string[]).includes(name)) throw new ScriptUsageError(`${name}: not a command`);
  return name as C;
}

export type ScriptArgs<O extends ScriptOptions> = ReturnType<typeof parse<O>>;

/** Parses the command line against `options` and runs `main`, unless `--help` asks for `usage` instead. */
export function runScript<O extends ScriptOptions>(
  usage: string,
  options: O,
  main: (args: ScriptArgs<O>) => Promise<void>,
): void {
  const run = async () => {
    const args = parse(options);
    if ('help' in args.values && args.values.help === true) console.log(usage);
    else await main(args);
  };
  run().catch((err: unknown) => {
    const misused = err instanceof ScriptUsageError;
    console.error(misused ? `${err.message}\n${usage}` : err instanceof Error ? err.message : err);
    process.exitCode = misused ? 2 : 1;
  });
}
