import { loadConfig } from './config.js';
import { startServer } from './server.js';

const config = loadConfig();
const started = Date.now();
const server = await startServer(config);
const idp = server.services.identityProvider;

console.log(`ONE Record server listening on ${server.url} (base URL ${config.baseUrl}), ready in ${Date.now() - started} ms`);
console.log(`data directory: ${config.dataDir}`);
console.log(`data holder:    ${server.services.holder}`);
if (idp) {
  console.log(`identity provider: ${idp.issuer} (token endpoint ${idp.tokenEndpoint})`);
  console.log('get a token:');
  console.log(`  curl -s -u ${idp.devClient.id}:${idp.devClient.secret} -d grant_type=client_credentials ${idp.tokenEndpoint}`);
  console.log(`  or: DATA_DIR=${config.dataDir} npx onerecord token`);
}

let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    console.log(`${signal}: closing (pending writes are flushed first)`);
    server.close().then(
      () => process.exit(0),
      (err: unknown) => {
        console.error(err);
        process.exit(1);
      },
    );
  });
}
