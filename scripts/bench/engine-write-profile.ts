/**
 * Virtuoso's side of a write on the engine backend, by request kind: a server on a Virtuoso of its own, reached
 * through a proxy here that names each request the server sends (a commit's recording of its intent, its operation,
 * the removal of applied intents, reads) and shares Virtuoso's CPU among the requests with the engine at each
 * moment (read from /proc at each request's start and end). 200 objects are created, then PATCH (each client its own
 * objects in turn, each change replacing two values) and POST of one Logistics Event run, each with 1 client and with
 * 20; per write: the requests of each kind, the operations they carried, and Virtuoso's CPU.
 *   npm run build && node dist/scripts/bench/engine-write-profile.js [seconds] [shared] [size]
 * shared: the server runs with `store.sparql.sharedWriters` (conditioned commits, the commit feed); size: on
 * engine-scale.ts's engine of that many objects in BENCH_DIR (loaded if missing; BENCH_ENGINE_MEMORY_MB sets its page
 * buffers), changing 200 of its objects no run changed before, instead of 200 objects created on an empty engine;
 * BENCH_DUMP_OPERATION=FILE writes the text of the first operation of a PATCH there.
 */
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import { writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config.js';
import { entryOf } from '../../src/map-entry.js';
import { createLogger } from '../../src/observability/logger.js';
import { CARGO } from '../../src/rdf/vocab.js';
import { startServer } from '../../src/server.js';
import { startVirtuoso, stopWithCheckpoint, type RunningVirtuoso } from '../virtuoso/virtuoso.js';
import { createPieces } from './cluster.js';
import { engineOfSize, objectId, unchangedObject } from './engine-objects.js';
import { benchEvent, type ChangedPiece, createdPiece, nextChange } from './fixtures.js';
import { closedLoop, fmt, freePort, LoadClient, machine, processCpuSeconds } from './harness.js';

const OBJECTS = 200;
const WARM_UP_SECONDS = 3;

/** What a request the server sends to the engine is: an update by its text, a query by what it reads. */
function kindOf(isUpdate: boolean, text: string): string {
  if (!isUpdate) {
    const query = new URLSearchParams(text).get('query') ?? text;
    if (/feedPosition/.test(query)) return 'read: commit feed';
    return /CONSTRUCT/i.test(query) ? 'read: construct' : 'read: select';
  }
  if (/intendedUpdate\w*> "/.test(text)) return 'recording of intents';
  if (/VALUES \?intent/.test(text)) return 'removal of applied intents';
  return 'operation';
}

interface Kind {
  requests: number;
  operations: number;
  cpuMs: number;
  /** Answers that say the engine rolled the request back to end a deadlock (sent again by the server). */
  deadlocks: number;
}

/** A proxy to Virtuoso's HTTP port that shares Virtuoso's CPU among the requests in flight, by kind. */
class ProfilingProxy {
  readonly kinds = new Map<string, Kind>();
  private readonly inFlight = new Set<string>();
  private lastCpu: number;
  private sent = 0;

  constructor(
    private readonly enginePort: number,
    private readonly enginePid: number,
  ) {
    this.lastCpu = processCpuSeconds(enginePid);
  }

  reset(): void {
    this.kinds.clear();
  }

  /** Virtuoso's CPU since the last moment, shared equally among the requests with it meanwhile. */
  private account(): void {
    const cpu = processCpuSeconds(this.enginePid);
    const share = ((cpu - this.lastCpu) * 1000) / Math.max(1, this.inFlight.size);
    this.lastCpu = cpu;
    for (const id of this.inFlight) this.kind(id.slice(id.indexOf(' ') + 1)).cpuMs += share;
  }

  private kind(name: string): Kind {
    return entryOf(this.kinds, name, () => ({ requests: 0, operations: 0, cpuMs: 0, deadlocks: 0 }));
  }

  handle(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const text = body.toString();
      const isUpdate = req.headers['content-type']?.startsWith('application/sparql-update') ?? false;
      const name = kindOf(isUpdate, isUpdate ? text : `${new URL(req.url ?? '/', 'http://x').search.slice(1)}&${text}`);
      if (process.env.BENCH_DUMP_OPERATION && name === 'operation' && text.includes('ChangeRequest')) {
        writeFileSync(process.env.BENCH_DUMP_OPERATION, text);
        delete process.env.BENCH_DUMP_OPERATION;
      }
      const kind = this.kind(name);
      kind.requests += 1;
      kind.operations += isUpdate ? text.split(' ;\n').length : 1;
      const id = `${this.sent++} ${name}`;
      this.account();
      this.inFlight.add(id);
      const forwarded = request(
        { host: '127.0.0.1', port: this.enginePort, path: req.url, method: req.method, headers: req.headers },
        (answer) => {
          if (/SR172/.test(`${answer.headers['x-sql-state']} ${answer.headers['x-sql-message']}`)) kind.deadlocks += 1;
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
          answer.on('end', () => {
            this.account();
            this.inFlight.delete(id);
          });
        },
      );
      forwarded.on('error', (err) => {
        this.inFlight.delete(id);
        res.destroy(err);
      });
      forwarded.end(body);
    });
  }
}

/** The engine written to, the server's port and data directory, and the objects to change once it serves. */
interface ProfiledEngine {
  engine: RunningVirtuoso;
  port: number;
  dataDir: string;
  /** The authenticated endpoint and its credentials, when the engine asks for them. */
  auth?: { url: string; user: string; password: string };
  pieces: (client: LoadClient, url: string) => Promise<ChangedPiece[]>;
  /** After the runs: keeps aside the objects changed (engine-scale's engine), or removes the engine. */
  done: () => Promise<void>;
}

/** An empty engine of its own, its objects created through the API. */
async function emptyEngine(): Promise<ProfiledEngine> {
  const dir = await mkdtemp(join(tmpdir(), 'onerecord-write-profile-'));
  const engine = await startVirtuoso({ dir: join(dir, 'virtuoso') });
  return {
    engine,
    port: await freePort(),
    dataDir: join(dir, 'server'),
    pieces: (client, url) => createPieces(client, url, OBJECTS),
    done: async () => {
      await engine.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** engine-scale's engine of `size` objects, OBJECTS of them no run changed before. */
async function engineOfObjects(size: number): Promise<ProfiledEngine> {
  const dir = process.env.BENCH_DIR;
  if (!dir) throw new Error("BENCH_DIR names the directory of engine-scale.js's engines");
  const { engine, objects, dataDir } = await engineOfSize(
    dir,
    size,
    Number(process.env.BENCH_ENGINE_MEMORY_MB ?? 4096),
  );
  const changed = objects.changed;
  const port = objects.port;
  return {
    engine,
    port,
    dataDir,
    auth: { url: engine.authUrl, user: engine.user, password: engine.password },
    pieces: async () =>
      Array.from({ length: OBJECTS }, () =>
        createdPiece(`http://127.0.0.1:${port}/logistics-objects/${objectId(unchangedObject(size, changed))}`),
      ),
    done: async () => {
      await objects.save(changed);
      await stopWithCheckpoint(engine);
    },
  };
}

async function main(): Promise<void> {
  const seconds = Number(process.argv[2] ?? 10);
  const shared = process.argv[3] === 'shared';
  const size = process.argv[4] === undefined ? undefined : Number(process.argv[4]);
  const profiled = size === undefined ? await emptyEngine() : await engineOfObjects(size);
  const { engine, port, auth } = profiled;
  const target = auth ? new URL(auth.url) : undefined;
  const proxy = new ProfilingProxy(engine.httpPort, engine.pid);
  const proxyServer = createServer((req, res) => proxy.handle(req, res)).listen(0, '127.0.0.1');
  await new Promise((resolve) => proxyServer.once('listening', resolve));
  const proxyUrl = `http://127.0.0.1:${(proxyServer.address() as { port: number }).port}${target?.pathname ?? '/sparql'}`;
  const credentials = auth ? { user: auth.user, password: auth.password, authScheme: 'digest' as const } : {};
  const config = loadConfig(
    {},
    {
      port,
      host: '127.0.0.1',
      baseUrl: `http://127.0.0.1:${port}`,
      dataDir: profiled.dataDir,
      decisionPolicy: 'auto',
      store: {
        backend: 'sparql',
        sparql: { queryUrl: proxyUrl, updateUrl: proxyUrl, sharedWriters: shared, ...credentials },
      },
    },
  );
  const server = await startServer(config, createLogger('silent'));
  const token = await server.services.identityProvider!.issue(server.services.holder, 3600);
  const client = new LoadClient({ Authorization: `Bearer ${token}` });
  try {
    const pieces = await profiled.pieces(client, server.url);
    console.log(
      `engine write profile: ${machine()}, ${seconds} s per run, ${OBJECTS} objects ` +
        `${size === undefined ? 'created on an empty engine' : `of ${size.toLocaleString('en')} loaded`}, shared writers ${shared}`,
    );
    let events = 0;
    const writes = {
      PATCH: async (c: number, clients: number, turn: number) => {
        const piece = pieces[(c + turn * clients) % OBJECTS];
        const unchanged = { ...piece };
        const res = await client.send(piece.iri, 'PATCH', nextChange(piece, false), {
          'Content-Type': 'application/ld+json',
        });
        if (res.status === 201) piece.revision += 1;
        else Object.assign(piece, unchanged);
        return res;
      },
      'event POST': (c: number) =>
        client.send(
          `${pieces[c % OBJECTS].iri}/logistics-events`,
          'POST',
          JSON.stringify({ '@context': { cargo: CARGO }, ...benchEvent(events++) }),
          {
            'Content-Type': 'application/ld+json',
          },
        ),
    };
    for (const [name, write] of Object.entries(writes))
      for (const clients of [1, 20]) {
        const turns = new Array<number>(clients).fill(0);
        const send = (c: number) => write(c, clients, turns[c]++);
        await closedLoop(clients, WARM_UP_SECONDS, send, 201);
        proxy.reset();
        const cpuBefore = processCpuSeconds(engine.pid);
        const run = await closedLoop(clients, seconds, send, 201);
        const totalMs = ((processCpuSeconds(engine.pid) - cpuBefore) * 1000) / run.count;
        console.log(
          `${name}, ${clients} client(s): ${fmt(run.perSecond)}/s, Virtuoso ${fmt(totalMs, 1)} ms of CPU per write`,
        );
        for (const [kind, k] of [...proxy.kinds].sort(([a], [b]) => a.localeCompare(b)))
          console.log(
            `  ${kind.padEnd(28)} ${fmt(k.requests / run.count, 2)} requests, ${fmt(k.operations / run.count, 2)} operations, ` +
              `${fmt(k.cpuMs / run.count, 2)} ms per write${k.deadlocks > 0 ? `, ${k.deadlocks} deadlocks` : ''}`,
          );
      }
  } finally {
    client.close();
    await server.close();
    proxyServer.close();
    await profiled.done();
  }
}

await main();
