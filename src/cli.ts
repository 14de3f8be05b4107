#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { IdentityProvider } from './auth/identity-provider.js';
import { loadConfig } from './config.js';
import { isValidIri } from './rdf/terms.js';
import { exportDataDirectory } from './store/embedded/export/export.js';
import { readQueryFile } from './domain/analytics/query-files.js';

const USAGE = `usage: onerecord token [--agent <logistics agent URI>] [--lifetime <seconds>]
       onerecord export [--out <file>]
       onerecord query <file.rq> [--view latest|events|revisions|audit] [--accept <media type>] [--url <server URL>]
       onerecord subscribe <topic> [--type] [--publisher <base URL>] [--body] [--status-changes] [--server <base URL>]

token   Prints a bearer token of the embedded identity provider for the agent (default: the data holder).
        Reads the key from DATA_DIR (or the dataDir of CONFIG_FILE); the server must have started once with it.
export  Writes everything the data directory holds (snapshot, journal, revision archive) as N-Quads, to the file or to
        stdout, without loading it into memory: for moving the data to a larger backend. Stop the server
        first (or export a copy of the directory).
query   Runs a SPARQL query file on the server's /sparql endpoint and prints the answer (TSV for SELECT/ASK,
        Turtle for CONSTRUCT/DESCRIBE unless --accept says otherwise). The view comes from a "# view: …" line
        of the file unless --view is given. The token is ONERECORD_TOKEN, else one of the embedded provider
        for the data holder; the server is --url, else the configured baseUrl.
subscribe  Makes this server subscribe to a Logistics Object IRI (or, with --type, a Logistics Object
        class at --publisher) at another server, through POST /internal/remote-subscriptions of this server
        (--server, default its baseUrl); prints the SubscriptionRequest the publisher answered. --body asks
        for the object in each notification, --status-changes for action-request status notifications.
        Reads the key like token.`;

const OPTIONS = {
  agent: { type: 'string' },
  lifetime: { type: 'string' },
  out: { type: 'string' },
  view: { type: 'string' },
  accept: { type: 'string' },
  url: { type: 'string' },
  type: { type: 'boolean' },
  publisher: { type: 'string' },
  body: { type: 'boolean' },
  'status-changes': { type: 'boolean' },
  server: { type: 'string' },
  help: { type: 'boolean' },
} as const;
const COMMAND_OPTIONS: Record<string, readonly string[]> = {
  token: ['agent', 'lifetime'],
  export: ['out'],
  query: ['view', 'accept', 'url'],
  subscribe: ['type', 'publisher', 'body', 'status-changes', 'server'],
};
/** Positional arguments after the command. */
const COMMAND_ARGUMENTS: Record<string, number> = { token: 0, export: 0, query: 1, subscribe: 1 };

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
  console.log(await holderToken(values.agent, values.lifetime === undefined ? undefined : Number(values.lifetime)));
  return 0;
}

/**
 * A token of the embedded provider, with the issuer and holder recorded by the server, not this
 * process's defaults: a token is only useful if its iss matches what the server that owns the
 * data directory verifies.
 */
async function holderToken(agent: string | undefined, lifetime: number | undefined): Promise<string> {
  const config = loadConfig();
  const { idp, holder } = await IdentityProvider.openRecorded(config.dataDir, config.identityProvider.tokenLifetimeSeconds);
  return idp.issue(agent ?? holder, lifetime);
}

async function exportData(values: Values): Promise<number> {
  const { dataDir } = loadConfig();
  const { lines, droppedTail } = await exportDataDirectory(dataDir, values.out);
  if (droppedTail) console.error(`left out the journal's last record: ${droppedTail} (a write torn by a crash, never acknowledged)`);
  console.error(`exported ${lines} N-Quads lines from ${dataDir}${values.out ? ` to ${values.out}` : ''}`);
  return 0;
}

/** `onerecord query <file>`: POSTs the file's query to /sparql and prints the answer; exit 1 with the server's message on an error. */
async function runQuery(file: string, options: Values): Promise<number> {
  let query;
  try {
    query = readQueryFile(file);
  } catch (err) {
    console.error((err as Error).message);
    return 2;
  }
  const base = (options.url ?? loadConfig().baseUrl).replace(/\/+$/, '');
  const token = process.env.ONERECORD_TOKEN ?? (await holderToken(undefined, undefined));
  const res = await fetch(`${base}/sparql?${new URLSearchParams({ view: options.view ?? query.view })}`, {
    method: 'POST',
    headers: {
      Authorization: `Bearer ${token}`,
      'Content-Type': 'application/sparql-query',
      Accept: options.accept ?? 'text/tab-separated-values, text/turtle;q=0.9',
    },
    body: query.text,
  });
  const body = await res.text();
  if (!res.ok) {
    const details = (JSON.parse(body) as { 'api:hasErrorDetail'?: { 'api:hasMessage': string }[] })['api:hasErrorDetail'] ?? [];
    console.error(`${res.status}: ${details.map((d) => d['api:hasMessage']).join('; ') || body}`);
    return 1;
  }
  process.stdout.write(body);
  const truncated = res.headers.get('sparql-results-truncated');
  if (truncated) console.error(`(answer cut at the server's row cap: ${truncated})`);
  return 0;
}

/** `onerecord subscribe`: asks the running server to subscribe at a publisher. */
async function subscribe(topic: string, values: Values): Promise<number> {
  const server = (values.server ?? loadConfig().baseUrl).replace(/\/+$/, '');
  const res = await fetch(`${server}/internal/remote-subscriptions`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${await holderToken(undefined, 300)}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({
      topic,
      topicType: values.type ? 'LOGISTICS_OBJECT_TYPE' : 'LOGISTICS_OBJECT_IDENTIFIER',
      ...(values.publisher ? { publisher: values.publisher } : {}),
      sendLogisticsObjectBody: values.body === true,
      notifyRequestStatusChange: values['status-changes'] === true,
    }),
  });
  const text = await res.text();
  if (res.status !== 201) {
    console.error(`onerecord: ${server} answered ${res.status}: ${text}`);
    return 1;
  }
  console.log(text);
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
  if (values.help || !allowed || positionals.length !== 1 + COMMAND_ARGUMENTS[command] || misplaced.length > 0) {
    if (misplaced.length > 0 && allowed) console.error(`${misplaced.map((o) => `--${o}`).join(', ')}: not an option of ${command}`);
    console.error(USAGE);
    return values.help ? 0 : 2;
  }
  if (command === 'query') return runQuery(positionals[1], values);
  if (command === 'subscribe') return subscribe(positionals[1], values);
  return command === 'token' ? token(values) : exportData(values);
}

try {
  process.exitCode = await run();
} catch (err) {
  console.error(`onerecord: ${(err as Error).message}`);
  process.exitCode = 1;
}
