// Starts or stops a Virtuoso for the server's SPARQL engine backend, from the command line:
//   node dist/scripts/virtuoso/cli.js start --dir D [--http-port N] [--sql-port N] [--buffer-memory-mb N]
//   node dist/scripts/virtuoso/cli.js stop --dir D
//   node dist/scripts/virtuoso/cli.js load --dir D --sql-port N --file export.nq   (onerecord export of an embedded data directory)
import { parseArgs } from 'node:util';
import { resolve } from 'node:path';
import { bulkLoad } from './bulk-load.js';
import { serverEnv, startVirtuoso, stopVirtuosoIn } from './virtuoso.js';

const USAGE = 'usage: cli.js start --dir D [--http-port N] [--sql-port N] [--buffer-memory-mb N] | cli.js stop --dir D | cli.js load --dir D --sql-port N --file F';

function port(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1 || value > 65_535) throw new Error(`not a port: ${text}`);
  return value;
}

async function main(): Promise<void> {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: { dir: { type: 'string' }, 'http-port': { type: 'string' }, 'sql-port': { type: 'string' }, 'buffer-memory-mb': { type: 'string' }, file: { type: 'string' } },
  });
  const [command] = positionals;
  if (!values.dir || (command !== 'start' && command !== 'stop' && command !== 'load')) throw new Error(USAGE);
  if (command === 'load') {
    const sqlPort = port(values['sql-port']);
    if (sqlPort === undefined || !values.file) throw new Error(USAGE);
    const { quads, seconds } = await bulkLoad({ dir: resolve(values.dir), sqlPort }, values.file);
    console.log(`${quads} quads of ${values.file} loaded in ${seconds.toFixed(1)} s`);
    return;
  }
  if (command === 'stop') {
    console.log((await stopVirtuosoIn(values.dir)) ? `Virtuoso in ${values.dir} stopped` : `no Virtuoso running in ${values.dir}`);
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
  ${Object.entries(serverEnv(engine)).map(([name, value]) => `${name}=${value}`).join(' \\\n  ')} \\
  npm start
Stop it: node dist/scripts/virtuoso/cli.js stop --dir ${values.dir}`);
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 1;
});
