#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { IdentityProvider } from './auth/identity-provider.js';
import { embeddedIssuer, holderIri, loadConfig } from './config.js';

const USAGE = 'usage: onerecord token [--agent <logistics agent URI>] [--lifetime <seconds>]';

async function run(): Promise<number> {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: { agent: { type: 'string' }, lifetime: { type: 'string' }, help: { type: 'boolean' } },
  });
  if (values.help || positionals[0] !== 'token') {
    console.error(USAGE);
    return values.help ? 0 : 2;
  }
  const config = loadConfig();
  const idp = await IdentityProvider.open({
    dataDir: config.dataDir,
    issuer: embeddedIssuer(config),
    holder: holderIri(config),
    clients: [],
    lifetimeSeconds: config.identityProvider.tokenLifetimeSeconds,
  });
  const lifetime = values.lifetime ? Number(values.lifetime) : undefined;
  console.log(await idp.issue(values.agent ?? holderIri(config), lifetime));
  return 0;
}

process.exitCode = await run();
