import type { Command } from './command.js';
import { changeCommand } from './changes.js';
import { PROFILE_HELP } from './connection.js';
import { eventCommand, eventsCommand } from './events.js';
import { grantCommand } from './grants.js';
import { importCommand } from './import/import.js';
import { exportCommand, tokenCommand } from './local.js';
import { createCommand, getCommand } from './objects.js';
import { openCommand } from './open.js';
import { queryCommand } from './query.js';
import { acceptCommand, rejectCommand, requestsCommand, revokeCommand } from './requests.js';
import { subscribeCommand } from './subscriptions.js';

export const COMMANDS: readonly Command[] = [
  tokenCommand,
  exportCommand,
  getCommand,
  createCommand,
  importCommand,
  changeCommand,
  requestsCommand,
  acceptCommand,
  rejectCommand,
  revokeCommand,
  eventsCommand,
  eventCommand,
  subscribeCommand,
  grantCommand,
  queryCommand,
  openCommand,
];

const CONNECTION_SYNOPSIS = '[--url <server URL>] [--profile <file>]';

const usageLine = (command: Command) =>
  `onerecord ${command.name} ${command.synopsis}${command.remote ? ` ${CONNECTION_SYNOPSIS}` : ''}`;

/** `onerecord --help`: every command on one line, then where remote commands find the server. */
export function overallUsage(): string {
  const [first, ...rest] = COMMANDS.map((command) => `onerecord ${command.name} ${command.synopsis}`);
  return `usage: ${first}
${rest.map((line) => `       ${line}`).join('\n')}

Commands other than token and export talk to a server over HTTP and also take ${CONNECTION_SYNOPSIS}.
${PROFILE_HELP}
onerecord <command> --help: what it does, with an example. Exit codes: 0 done, 1 refused (the
server's api:Error is shown), 2 usage error.`;
}

/** `onerecord <command> --help`. */
export function commandHelp(command: Command): string {
  return `usage: ${usageLine(command)}

${command.description}

example:
  ${command.example}${command.remote ? `\n\n${PROFILE_HELP}` : ''}`;
}

/** What a usage error adds to its message: the command's usage line, and where to read more. */
export function usageHint(command: Command): string {
  return `usage: ${usageLine(command)}\n(onerecord ${command.name} --help: more, with an example)`;
}
