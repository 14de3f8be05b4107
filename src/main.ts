import { ConfigError, loadConfig, type Config } from './config.js';
import { createLogger } from './observability/logger.js';
import { startServer } from './server.js';
import { StoreFullError, StoreTooLargeError } from './store/errors.js';

function configOrExit(): Config {
  try {
    return loadConfig();
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`${err.message}\n`);
    process.exit(2);
  }
}

const config = configOrExit();
const logger = createLogger(config.logLevel);
const started = Date.now();
const server = await startServer(config, logger).catch((err: unknown) => {
  // The data does not fit: a message, not a stack trace (also when the data holder cannot be written at first start).
  if (!(err instanceof StoreTooLargeError || err instanceof StoreFullError)) throw err;
  logger.fatal({ event: 'store-too-large' }, err.message);
  logger.flush();
  process.exit(1);
});
const idp = server.services.identityProvider;

let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    logger.info({ event: 'shutdown', signal }, `${signal}: closing (pending writes are flushed first)`);
    server.close().then(
      () => {
        logger.info({ event: 'stopped' }, 'stopped');
        logger.flush();
        process.exit(0);
      },
      (err: unknown) => {
        logger.fatal({ err }, 'shutdown failed');
        logger.flush();
        process.exit(1);
      },
    );
  });
}

// Only once a stop can be clean: a supervisor may send SIGTERM as soon as it reads this.
logger.info(
  {
    event: 'started',
    url: server.url,
    baseUrl: config.baseUrl,
    dataDir: config.dataDir,
    holder: server.services.holder,
    tokenEndpoint: idp?.tokenEndpoint,
    ms: Date.now() - started,
  },
  `ONE Record server listening on ${server.url} (base URL ${config.baseUrl})`,
);
if (idp)
  logger.info(
    { event: 'token-hint' },
    `get a token for the data holder: DATA_DIR=${config.dataDir} npx onerecord token`,
  );
