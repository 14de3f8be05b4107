import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { loadConfig } from '../src/config.js';
import { startServer } from '../src/server.js';
import { StoreFailedError, StoreFullError, StoreTooLargeError } from '../src/store/errors.js';
import type { StoreCapacity } from '../src/store/capacity.js';
import { expectApiError } from './support/api-error.js';
import { add, change, createObject, patch, piece, str } from './support/changes.js';
import { testLogger } from './support/log-sink.js';
import { freePort, postJsonLd, startTestServer, type TestServer } from './support/server.js';
import { graphQuads, openStore, tempDir } from './support/store-data.js';

const METRICS_TOKEN = 'metrics-token-for-capacity-tests-0123';
const MAIN = fileURLToPath(new URL('../src/main.js', import.meta.url));
/** Where a write past the capacity must point the operator. */
const FULL_MESSAGE =
  /store is full: it holds \d+ quads .* capacity of \d+ \(store\.capacityQuads\).*Nothing was stored; reads go on.*onerecord export/;

async function readiness(server: TestServer): Promise<{ status: string; store: StoreCapacity }> {
  const res = await fetch(`${server.url}/health/ready`);
  expect(res.status).to.equal(200);
  return (await res.json()) as { status: string; store: StoreCapacity };
}

/** Every file of the data directory with its size: what a refused write must leave unchanged. */
async function directorySizes(dir: string): Promise<Record<string, number>> {
  const sizes: Record<string, number> = {};
  for (const name of (await readdir(dir)).sort()) sizes[name] = (await stat(join(dir, name))).size;
  return sizes;
}

function metricSample(text: string, name: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  if (!line) throw new Error(`no sample ${name}`);
  return Number(line.split(' ')[1]);
}

describe('capacity: a full store refuses writes with 507 and keeps serving reads', () => {
  let server: TestServer;
  let dataDir: string;
  let removeDir: () => Promise<void>;
  let capacityQuads: number;
  let port: number;
  const acknowledged: string[] = [];
  /** A server on the data directory, always on the same port: object IRIs (and the data holder's) stay the same. */
  const start = (store: { capacityQuads?: number; memoryReserveBytes?: number }) =>
    startTestServer({ port, baseUrl: `http://127.0.0.1:${port}`, store, metrics: { token: METRICS_TOKEN } }, dataDir);

  before(async function () {
    this.timeout(60_000);
    ({ dir: dataDir, remove: removeDir } = await tempDir());
    port = await freePort();
    // First start: learn what the data holder takes, then give room for a few objects only.
    const first = await start({});
    const { store } = await readiness(first);
    await first.stop();
    capacityQuads = store.quads + 100;
    server = await start({ capacityQuads });
  });
  after(async () => {
    await server.close();
    await removeDir();
  });

  it('accepts writes up to the capacity, then answers 507 with an api:Error saying what to do, and stores nothing of the refused write', async () => {
    let refused: Response | undefined;
    for (let i = 0; i < 100 && !refused; i++) {
      const res = await postJsonLd(server, '/logistics-objects', piece(3));
      if (res.status === 201) acknowledged.push(res.headers.get('location')!);
      else refused = res;
    }
    expect(acknowledged.length).to.be.greaterThan(1);
    expect(refused, 'no write was refused').to.not.equal(undefined);
    await expectApiError(refused!, 507, FULL_MESSAGE);

    const before = await directorySizes(dataDir);
    await expectApiError(await postJsonLd(server, '/logistics-objects', piece(3)), 507, FULL_MESSAGE);
    expect(await directorySizes(dataDir)).to.deep.equal(before); // not journaled
  });

  it('refuses a change that would add quads past the capacity; the object keeps its revision', async () => {
    const object = acknowledged[0];
    // A change is stored as what it adds (not a copy of the object): make it add more than the room left.
    const { store } = await readiness(server);
    const values = Array.from({ length: store.headroomQuads + 1 }, (_, i) => str(`instruction ${i}`));
    const res = await patch(
      server,
      object,
      change(object, 1, [add(`${object}`, 'textualHandlingInstructions', ...values)]),
    );
    await expectApiError(res, 507, FULL_MESSAGE);
    const read = await server.request(object);
    expect(read.status).to.equal(200);
    expect(read.headers.get('latest-revision')).to.equal('1');
  });

  it('reads go on: every acknowledged object, the server information, lists', async () => {
    for (const object of acknowledged) expect((await server.request(object)).status, object).to.equal(200);
    expect((await server.request('/')).status).to.equal(200);
    expect((await server.request(`${acknowledged[0]}/audit-trail`)).status).to.equal(200);
  });

  it('/health/ready and /metrics report capacity, headroom and that writes are refused', async () => {
    const { status, store } = await readiness(server);
    expect(status).to.equal('ready');
    expect(store.capacityQuads).to.equal(capacityQuads);
    expect(store.quads).to.be.at.most(capacityQuads);
    expect(store.headroomQuads).to.equal(capacityQuads - store.quads);
    expect(store.writesRefused).to.match(/store is full/);
    expect(store.wasmMemoryLimitBytes).to.equal(2 ** 32);
    expect(store.wasmMemoryBytes).to.be.greaterThan(0);

    const text = await (
      await fetch(`${server.url}/metrics`, { headers: { Authorization: `Bearer ${METRICS_TOKEN}` } })
    ).text();
    expect(metricSample(text, 'onerecord_store_capacity_quads')).to.equal(capacityQuads);
    expect(metricSample(text, 'onerecord_store_quads')).to.equal(store.quads);
    expect(metricSample(text, 'onerecord_store_headroom_quads')).to.equal(store.headroomQuads);
    expect(metricSample(text, 'onerecord_store_writes_refused')).to.equal(1);
  });

  it('restarts with the full store: everything acknowledged is there, writes are still refused, and a larger capacity takes them again', async function () {
    this.timeout(60_000);
    const { store: beforeRestart } = await readiness(server);
    await server.stop();
    await server.restart();
    const { store } = await readiness(server);
    expect(store.quads).to.equal(beforeRestart.quads); // the count kept by commits matches a recount at start
    for (const object of acknowledged) expect((await server.request(object)).status, object).to.equal(200);
    await expectApiError(await postJsonLd(server, '/logistics-objects', piece(3)), 507, FULL_MESSAGE);

    await server.stop();
    const larger = await start({ capacityQuads: capacityQuads + 1000 });
    try {
      const location = await createObject(larger, piece(3));
      expect((await larger.request(location)).status).to.equal(200);
      expect((await readiness(larger)).store.writesRefused).to.equal(undefined);
    } finally {
      await larger.stop();
      server = await start({ capacityQuads });
    }
  });

  it('a data directory that cannot be loaded with the memory reserve free stops the start with a message, and changes nothing on disk', async function () {
    this.timeout(60_000);
    await server.stop();
    const before = await directorySizes(dataDir);
    const config = loadConfig(
      {},
      {
        port,
        host: '127.0.0.1',
        baseUrl: `http://127.0.0.1:${port}`,
        dataDir,
        store: { memoryReserveBytes: 2 ** 32 - 1 },
      },
    );
    let error: unknown;
    await startServer(config, testLogger()).catch((err: unknown) => (error = err));
    expect(error).to.be.instanceOf(StoreTooLargeError);
    expect((error as Error).message).to.match(
      /holds more than the embedded store can load: .*store\.memoryReserveBytes.*Nothing on disk was changed.*onerecord export/,
    );
    expect(await directorySizes(dataDir)).to.deep.equal(before);

    // `npm start` says so in one log line and exits 1, without a stack trace.
    const main = spawn(process.execPath, [MAIN], {
      env: { PATH: process.env.PATH, DATA_DIR: dataDir, PORT: '0', STORE_MEMORY_RESERVE_BYTES: String(2 ** 32 - 1) },
    });
    let output = '';
    main.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    main.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const [code] = (await once(main, 'exit')) as [number];
    expect(code).to.equal(1);
    const lines = output.split('\n').filter(Boolean);
    expect(
      lines.every((line) => line.startsWith('{')),
      output,
    ).to.equal(true);
    const fatal = lines
      .map((line) => JSON.parse(line) as { event?: string; msg: string })
      .find((line) => line.event === 'store-too-large');
    expect(fatal?.msg).to.match(/holds more than the embedded store can load.*onerecord export/);
    expect(output).to.not.match(/\n\s+at /);
    expect(await directorySizes(dataDir)).to.deep.equal(before);
    // The port is free again: the listener opened for health probes was closed.
    server = await start({ capacityQuads });
    expect((await server.request(acknowledged[0])).status).to.equal(200);
  });
});

describe('capacity: the store itself', () => {
  let dir: string;
  let remove: () => Promise<void>;
  beforeEach(async () => ({ dir, remove } = await tempDir()));
  afterEach(() => remove());

  it('refuses a write that would cut into the WASM memory reserve, before journaling it', async () => {
    const { store } = await openStore(dir, { memoryReserveBytes: 2 ** 32 - 1 });
    const before = await directorySizes(dir);
    let error: unknown;
    await store.commit(store.begin({ insert: graphQuads('g', 10) })).catch((err: unknown) => (error = err));
    expect(error).to.be.instanceOf(StoreFullError);
    expect((error as Error).message).to.match(/memory is full.*store\.memoryReserveBytes.*Nothing was stored/);
    expect(await directorySizes(dir)).to.deep.equal(before);
    expect(store.capacity().writesRefused).to.match(/memory is full/);
    await store.close();
  });

  it('a write that removes more than it adds is let through when the store is full', async () => {
    const { store } = await openStore(dir);
    await store.commit(store.begin({ insert: graphQuads('g', 10) }));
    await store.close();
    const { store: full } = await openStore(dir, { capacityQuads: 10 });
    const refused = await full.commit(full.begin({ insert: graphQuads('h', 1) })).catch((err: unknown) => err);
    expect(refused).to.be.instanceOf(StoreFullError);
    await full.commit(full.begin({ delete: graphQuads('g', 4), insert: graphQuads('h', 1) }));
    expect(full.capacity()).to.include({ quads: 7, headroomQuads: 3 });
    expect(full.capacity().writesRefused).to.equal(undefined);
    await full.close();
  });

  it('a record that cannot be applied is never acknowledged, later writes are refused at once, reads go on, and a restart applies it', async () => {
    const { store } = await openStore(dir);
    await store.commit(store.begin({ insert: graphQuads('kept', 5) }));
    // Oxigraph running out of memory inside apply cannot be produced cheaply in a test (it takes
    // ~4 GiB): the index's apply is made to fail the way it does then, once.
    const apply = store.index.apply.bind(store.index);
    store.index.apply = () => {
      store.index.apply = apply;
      throw new WebAssembly.RuntimeError('unreachable');
    };
    const failed = await store.commit(store.begin({ insert: graphQuads('lost', 5) })).catch((err: unknown) => err);
    expect(failed).to.be.instanceOf(StoreFailedError);
    const later = await store.commit(store.begin({ insert: graphQuads('later', 5) })).catch((err: unknown) => err);
    expect(later).to.be.instanceOf(StoreFailedError);
    expect((later as Error).message).to.match(/refused until the server restarts/);
    expect(await store.graphTriples('https://store.example.com/kept')).to.have.length(5);
    expect(store.capacity().writesRefused).to.match(/restart the server/);
    await store.close();

    const { store: reopened } = await openStore(dir);
    expect(await reopened.graphTriples('https://store.example.com/lost')).to.have.length(5); // durable, so applied at start
    expect(await reopened.graphTriples('https://store.example.com/later')).to.have.length(0); // refused before the journal
    await reopened.commit(reopened.begin({ insert: graphQuads('after', 5) }));
    await reopened.close();
  });
});
