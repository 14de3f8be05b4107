// Starts or stops a Virtuoso for the server's SPARQL engine backend, from the command line (USAGE).
import { resolve } from 'node:path';
import { runScript, ScriptUsageError, subcommand } from '../script-cli.js';
import { bulkLoad } from './bulk-load.js';
import { serverEnv, startVirtuoso, stopVirtuosoIn } from './virtuoso.js';

const SELF = 'node dist/scripts/virtuoso/cli.js';
const USAGE = `usage: ${SELF} start --dir D [--http-port N] [--sql-port N] [--buffer-memory-mb N]
       ${SELF} stop --dir D
       ${SELF} load --dir D --sql-port N --file F

start  a Virtuoso with every file in D that runs on after the command; prints its URLs and the
       server's settings for it
stop   stops the Virtuoso started in D
load   bulk-loads F (N-Quads: onerecord export of an embedded data directory) into the Virtuoso
       in D that listens on SQL port N`;

const OPTIONS = {
  dir: { type: 'string' },
  'http-port': { type: 'string' },
  'sql-port': { type: 'string' },
  'buffer-memory-mb': { type: 'string' },
  file: { type: 'string' },
} as const;

function port(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1 || value > 65_535) throw new ScriptUsageError(`not a port: ${text}`);
  return value;
}

runScript(USAGE, OPTIONS, async ({ positionals, values }) => {
  const command = subcommand(positionals, ['start', 'stop', 'load']);
  if (!values.dir) throw new ScriptUsageError(`${command} takes --dir`);
  if (command === 'load') {
    const sqlPort = port(values['sql-port']);
    if (sqlPort === undefined || !values.file) throw new ScriptUsageError('load takes --sql-port and --file');
    const { quads, seconds } = await bulkLoad({ dir: resolve(values.dir), sqlPort }, values.file);
    console.log(`${quads} quads of ${values.file} loaded in ${seconds.toFixed(1)} s`);
    return;
  }
  if (command === 'stop') {
    console.log(
      (await stopVirtuosoIn(values.dir)) ? `Virtuoso in ${values.dir} stopped` : `no Virtuoso running in ${values.dir}`,
    );
    return;
  }
  const memory = values['buffer-memory-mb'];
  const started = Date.now();
  const engine = await startVirtuoso({
    dir: values.dir,
    httpPort: port(values['http-port']),
    sqlPort: port(values['sql-port']),
    bufferMemoryMb: memory === undefined ? undefined : Number(memory),
    detached: true,
  });
  console.log(`Virtuoso ${engine.pid} answers in ${((Date.now() - started) / 1000).toFixed(1)} s; data in ${values.dir}
  SPARQL, anonymous (queries and updates): ${engine.queryUrl}
  SPARQL, Digest as ${engine.user}/${engine.password}: ${engine.authUrl}
  SPARQL, Basic as ${engine.user}/${engine.password}: ${engine.basicAuthUrl}
  SQL: isql-vt ${engine.sqlPort} dba dba
Run the server against it:
  ${Object.entries(serverEnv(engine))
    .map(([name, value]) => `${name}=${value}`)
    .join(' \\\n  ')} \\
  npm start
Stop it: ${SELF} stop --dir ${values.dir}`);
});
