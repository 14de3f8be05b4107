#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { IdentityProvider } from './auth/identity-provider.js';
import { loadConfig } from './config.js';
import { isValidIri } from './rdf/terms.js';

const USAGE = `usage: onerecord token [--agent <logistics agent URI>] [--lifetime <seconds>]

Prints a bearer token of the embedded identity provider for the agent (default: the data holder).
Reads the key from DATA_DIR (or the dataDir of CONFIG_FILE); the server must have started once with it.`;

const OPTIONS = { agent: { type: 'string' }, lifetime: { type: 'string' }, help: { type: 'boolean' } } as const;

function readArguments() {
  try {
    return parseArgs({ allowPositionals: true, options: OPTIONS });
  } catch (err) {
    console.error((err as Error).message);
    return undefined;
  }
}

async function run(): Promise<number> {
  const args = readArguments();
  if (!args) {
    console.error(USAGE);
    return 2;
  }
  const { positionals, values } = args;
  if (values.help || positionals.length !== 1 || positionals[0] !== 'token') {
    console.error(USAGE);
    return values.help ? 0 : 2;
  }
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

try {
  process.exitCode = await run();
} catch (err) {
  console.error(`onerecord: ${(err as Error).message}`);
  process.exitCode = 1;
}
