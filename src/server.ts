import { once } from 'node:events';
import type { Server } from 'node:http';
import { fileURLToPath } from 'node:url';
import { AccessControl } from './auth/access-control.js';
import { objectLevelEventPermissions } from './auth/event-permissions.js';
import { IdentityProvider } from './auth/identity-provider.js';
import { TokenVerifier } from './auth/token-verifier.js';
import { embeddedIssuer, holderIri, type Config } from './config.js';
import { EventIndex } from './domain/event-index.js';
import { LogisticsEvents } from './domain/logistics-events.js';
import { LogisticsObjects } from './domain/logistics-objects.js';
import { RevisionIndex } from './domain/revision-index.js';
import { createApp } from './http/app.js';
import type { Services } from './http/context.js';
import { JsonLdFallback } from './rdf/jsonld-fallback.js';
import { CargoOntology } from './rdf/ontology.js';
import { DurableStore } from './store/durable-store.js';
import { readEventRows } from './store/event-queries.js';
import { readRevisionRows } from './store/queries.js';
import { ActionRequestIndex } from './domain/action-request-index.js';
import { ActionRequests } from './domain/action-requests.js';
import { ChangeRequests } from './domain/change-requests.js';
import { api } from './rdf/vocab.js';
import { readActionRequestRows, readConcernRows, readStatusRows } from './store/action-request-queries.js';
import { canonicalLiterals } from './store/canonical-literals.js';
import { MovedObjects } from './domain/moved-objects.js';
import { readMoves } from './store/schema/moved-objects.js';

export const ONTOLOGY_FILE = fileURLToPath(new URL('../../ontology/IATA-1R-DM-Ontology.ttl', import.meta.url));

export interface RunningServer {
  url: string;
  services: Services;
  store: DurableStore;
  close(): Promise<void>;
}

/** Opens the store, rebuilds indexes, and listens. Used by `npm start`, tests and benchmarks. */
export async function startServer(config: Config, log: (message: string) => void = console.log): Promise<RunningServer> {
  const ontology = CargoOntology.fromFile(ONTOLOGY_FILE);
  const store = await DurableStore.open({
    dataDir: config.dataDir,
    fsync: config.journal.fsync,
    snapshotAfterBytes: config.journal.snapshotAfterBytes,
    log,
  });
  const holder = holderIri(config);
  const identityProvider = config.identityProvider.enabled
    ? await IdentityProvider.open({
        dataDir: config.dataDir,
        issuer: embeddedIssuer(config),
        holder,
        clients: config.identityProvider.clients,
        lifetimeSeconds: config.identityProvider.tokenLifetimeSeconds,
      })
    : undefined;
  const verifier = new TokenVerifier(
    config.trustedIssuers,
    config.cache.verifiedTokens,
    identityProvider && { issuer: identityProvider.issuer, jwk: identityProvider.publicJwk },
  );
  const access = new AccessControl(new Set([holder, ...config.internalAgents]), config.hideForbidden);
  const index = RevisionIndex.fromRows(readRevisionRows(store));
  const objects = new LogisticsObjects(store, index, ontology, access, config.baseUrl);
  await objects.ensureDataHolder(holder, config.holderName);
  const eventIndex = EventIndex.fromRows(readEventRows(store));
  const events = new LogisticsEvents(store, eventIndex, objects, ontology, access, objectLevelEventPermissions(access));
  const requestIndex = ActionRequestIndex.fromRows(readActionRequestRows(store), readConcernRows(store), readStatusRows(store));
  const actionRequests = new ActionRequests(store, requestIndex, access, holder, config.baseUrl);
  const changeRequests = new ChangeRequests(objects, actionRequests, ontology, (literals) => canonicalLiterals(store, literals), config.decisionPolicy, holder);
  actionRequests.registerAcceptor(api.ChangeRequest, changeRequests);
  const moves = new MovedObjects(store, objects, access, readMoves(store));

  const jsonLd = new JsonLdFallback(config.limits.jsonLdMillis);
  const services: Services = { config, access, verifier, identityProvider, objects, events, moves, actionRequests, changeRequests, jsonLd, holder, startedAt: new Date(), log };
  const server: Server = createApp(services).listen(config.port, config.host);
  await once(server, 'listening');
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  return {
    url: `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`,
    services,
    store,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await jsonLd.close();
      await store.close();
    },
  };
}
