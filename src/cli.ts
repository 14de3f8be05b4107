#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { IdentityProvider } from './auth/identity-provider.js';
import { loadConfig } from './config.js';
import { isValidIri } from './rdf/terms.js';
import { exportDataDirectory } from './store/export.js';

const USAGE = `usage: onerecord token [--agent <logistics agent URI>] [--lifetime <seconds>]
       onerecord export [--out <file>]

token   Prints a bearer token of the embedded identity provider for the agent (default: the data holder).
        Reads the key from DATA_DIR (or the dataDir of CONFIG_FILE); the server must have started once with it.
export  Writes everything the data directory holds (snapshot and journal) as N-Quads, to the file or to
        stdout, without loading it into memory: for moving the data to a larger backend. Stop the server
        first (or export a copy of the directory).`;

const OPTIONS = { agent: { type: 'string' }, lifetime: { type: 'string' }, out: { type: 'string' }, help: { type: 'boolean' } } as const;
const COMMAND_OPTIONS: Record<string, readonly string[]> = { token: ['agent', 'lifetime'], export: ['out'] };

function readArguments() {
  try {
    return parseArgs({ allowPositionals: true, options: OPTIONS });
  } catch (err) {
    console.error((err as Error).message);
    return undefined;
  }
}

type Values = NonNullable<ReturnType<typeof readArguments>>['values'];

async function token(values: Values): Promise<number> {
  if (values.lifetime !== undefined && !/^[1-9][0-9]{0,8}$/.test(values.lifetime)) {
    console.error('--lifetime must be a positive number of seconds');
    return 2;
  }
  if (values.agent !== undefined && !isValidIri(values.agent)) {
    console.error('--agent must be an absolute IRI (the logistics agent the token speaks for)');
    return 2;
  }
  const config = loadConfig();
  // The issuer and holder recorded by the server, not this process's defaults: a token is only
  // useful if its iss matches what the server that owns the data directory verifies.
  const { idp, holder } = await IdentityProvider.openRecorded(config.dataDir, config.identityProvider.tokenLifetimeSeconds);
  const lifetime = values.lifetime === undefined ? undefined : Number(values.lifetime);
  console.log(await idp.issue(values.agent ?? holder, lifetime));
  return 0;
}

async function exportData(values: Values): Promise<number> {
  const { dataDir } = loadConfig();
  const { lines, droppedTail } = await exportDataDirectory(dataDir, values.out);
  if (droppedTail) console.error(`left out the journal's last record: ${droppedTail} (a write torn by a crash, never acknowledged)`);
  console.error(`exported ${lines} N-Quads lines from ${dataDir}${values.out ? ` to ${values.out}` : ''}`);
  return 0;
}

async function run(): Promise<number> {
  const args = readArguments();
  if (!args) {
    console.error(USAGE);
    return 2;
  }
  const { positionals, values } = args;
  const command = positionals[0];
  const allowed = COMMAND_OPTIONS[command] as readonly string[] | undefined;
  const misplaced = Object.keys(values).filter((option) => option !== 'help' && !allowed?.includes(option));
  if (values.help || positionals.length !== 1 || !allowed || misplaced.length > 0) {
    if (misplaced.length > 0 && allowed) console.error(`${misplaced.map((o) => `--${o}`).join(', ')}: not an option of ${command}`);
    console.error(USAGE);
    return values.help ? 0 : 2;
  }
  return command === 'token' ? token(values) : exportData(values);
}

try {
  process.exitCode = await run();
} catch (err) {
  console.error(`onerecord: ${(err as Error).message}`);
  process.exitCode = 1;
}
