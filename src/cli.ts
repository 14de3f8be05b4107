#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { ApiFailure } from './cli/api-errors.js';
import { EXIT, textOption, UsageError, type Command } from './cli/command.js';
import { commandHelp, COMMANDS, overallUsage, usageHint } from './cli/commands.js';
import { connect } from './cli/connection.js';

/** Options every command takes; remote ones also say where the server is and how to reach it. */
const COMMON_OPTIONS = { help: { type: 'boolean', short: 'h' } } as const;
const CONNECTION_OPTIONS = { url: { type: 'string' }, profile: { type: 'string' } } as const;

function parse(command: Command, args: string[]) {
  try {
    return parseArgs({
      args,
      allowPositionals: true,
      options: { ...command.options, ...COMMON_OPTIONS, ...(command.remote ? CONNECTION_OPTIONS : {}) },
    });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

async function runCommand(command: Command, args: string[]): Promise<number> {
  const { positionals, values } = parse(command, args);
  if (values.help) {
    console.log(commandHelp(command));
    return EXIT.ok;
  }
  const [least, most] = command.arity;
  if (positionals.length < least || positionals.length > most)
    throw new UsageError(
      `${command.name} takes ${least === most ? least : `${least} to ${most}`} argument${most === 1 ? '' : 's'}`,
    );
  const invocation = { args: positionals, values };
  if (!command.remote) return command.run(invocation);
  // subscribe has always called the server it works through --server.
  return command.run(
    invocation,
    await connect({
      url: textOption(values, 'url') ?? textOption(values, 'server'),
      profile: textOption(values, 'profile'),
    }),
  );
}

async function run(argv: string[]): Promise<number> {
  const [name, ...args] = argv;
  // Help asked for is an answer (stdout, so it pages); the same text after a mistake goes to stderr.
  if (name === '--help' || name === '-h') {
    console.log(overallUsage());
    return EXIT.ok;
  }
  const command = COMMANDS.find((c) => c.name === name);
  if (!command) {
    console.error(`${name === undefined ? 'no command given' : `${name}: not a command`}\n${overallUsage()}`);
    return EXIT.usage;
  }
  try {
    return await runCommand(command, args);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    console.error(`${err.message}\n${usageHint(command)}`);
    return EXIT.usage;
  }
}

try {
  process.exitCode = await run(process.argv.slice(2));
} catch (err) {
  // A refusal is the server's api:Error, on one line that starts with the status; nothing prints a stack trace.
  console.error(err instanceof ApiFailure ? err.message : `onerecord: ${(err as Error).message}`);
  process.exitCode = EXIT.refused;
}
