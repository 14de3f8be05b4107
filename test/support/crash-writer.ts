/**
 * A server in a process of its own, for tests that kill it:
 *   node dist/test/support/crash-writer.js <dataDir> <port> <snapshotAfterBytes> [<configuration JSON>]
 * Prints one JSON line `{ url, token }` once it listens (the token speaks for the data holder);
 * the server's log lines go to stderr. SIGTERM closes it cleanly; SIGKILL is the crash.
 */
import { loadConfig, type ConfigOverrides } from '../../src/config.js';
import { pino } from 'pino';
import { createLogger } from '../../src/observability/logger.js';
import { startServer } from '../../src/server.js';

const [dataDir, port, snapshotAfterBytes, extra] = process.argv.slice(2);
const config = loadConfig(
  {},
  {
    // Its own address, unless it is one of several behind a balancer (the balancer's).
    baseUrl: `http://127.0.0.1:${port}`,
    ...(extra ? (JSON.parse(extra) as ConfigOverrides) : {}),
    host: '127.0.0.1',
    port: Number(port),
    dataDir,
    journal: { snapshotAfterBytes: Number(snapshotAfterBytes) },
  },
);
const server = await startServer(config, createLogger('info', pino.destination({ dest: 2, sync: true })));
const token = await server.services.identityProvider!.issue(server.services.holder);
// Before the line that says it listens: a process descheduled between the two would otherwise die
// of a SIGTERM sent on that line (the default action), a crash where a clean stop was meant.
process.on('SIGTERM', () => void server.close().then(() => process.exit(0)));
process.stdout.write(`${JSON.stringify({ url: server.url, token })}\n`);
