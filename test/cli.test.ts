import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { decodeJwt } from 'jose';
import { add, change, createObject, piece, str, submit } from './support/changes.js';
import { OTHER_AGENT, postJsonLd, startTestServer, type TestServer } from './support/server.js';
import { allQuads, openStore } from './support/store-data.js';
import { Parser } from 'n3';
import { namedNode, quad, quadToNq } from '../src/rdf/terms.js';
import { readRevisions, revisionGraph, revisionQuads } from '../src/store/schema/revisions.js';

const run = promisify(execFile);
const REPO = fileURLToPath(new URL('../../', import.meta.url));
const CLI = fileURLToPath(new URL('../src/cli.js', import.meta.url));
const PIECE = { '@context': { cargo: 'https://onerecord.iata.org/ns/cargo#' }, '@type': 'cargo:Piece' };

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the CLI as its own process with only DATA_DIR set (no BASE_URL, PORT or CONFIG_FILE). */
async function cli(dataDir: string, ...args: string[]): Promise<Outcome> {
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, ...args], { env: { PATH: process.env.PATH, DATA_DIR: dataDir } });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const failed = err as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

describe('onerecord token (CLI)', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  const withToken = (token: string, path: string, init: RequestInit = {}) =>
    server.request(path, { ...init, agent: 'none', headers: { ...(init.headers as Record<string, string>), Authorization: `Bearer ${token}` } });

  it('prints a token for the data holder that the server accepts, with the server\'s issuer', async () => {
    const { code, stdout } = await cli(server.dataDir, 'token');
    expect(code).to.equal(0);
    const token = stdout.trim();
    expect(stdout).to.equal(`${token}\n`);
    const claims = decodeJwt(token);
    expect(claims.iss).to.equal(`${server.url}/idp`);
    expect(claims.logistics_agent_uri).to.equal(server.running.services.holder);
    expect((await withToken(token, '/')).status).to.equal(200);
    const created = await withToken(token, '/logistics-objects', { method: 'POST', headers: { 'Content-Type': 'application/ld+json' }, body: JSON.stringify(PIECE) });
    expect(created.status).to.equal(201);
  });

  it('--agent gives a token for that agent: authenticated, but not an internal actor', async () => {
    const { code, stdout } = await cli(server.dataDir, 'token', '--agent', OTHER_AGENT);
    expect(code).to.equal(0);
    const token = stdout.trim();
    expect(decodeJwt(token).logistics_agent_uri).to.equal(OTHER_AGENT);
    expect((await withToken(token, '/')).status).to.equal(200);
    const created = await withToken(token, '/logistics-objects', { method: 'POST', headers: { 'Content-Type': 'application/ld+json' }, body: JSON.stringify(PIECE) });
    expect(created.status).to.equal(403);
    // Nor may it read the holder's objects.
    const location = (await postJsonLd(server, '/logistics-objects', PIECE)).headers.get('location')!;
    expect((await withToken(token, location)).status).to.equal(403);
  });

  it('--lifetime sets the expiry', async () => {
    const claims = decodeJwt((await cli(server.dataDir, 'token', '--lifetime', '120')).stdout.trim());
    expect(claims.exp! - claims.iat!).to.equal(120);
  });

  it('runs as `npx onerecord token` (the bin npm install links)', async () => {
    const { stdout } = await run('npx', ['--no-install', 'onerecord', 'token'], { cwd: REPO, env: { PATH: process.env.PATH, HOME: process.env.HOME, DATA_DIR: server.dataDir } });
    expect((await withToken(stdout.trim(), '/')).status).to.equal(200);
  });

  it('usage errors exit with 2 and print the usage; nothing on stdout', async () => {
    for (const args of [[], ['tokens'], ['token', 'extra'], ['token', '--agent', 'not an IRI'], ['token', '--lifetime', '-5'], ['token', '--lifetime', 'soon']]) {
      const outcome = await cli(server.dataDir, ...args);
      expect(outcome.code, args.join(' ')).to.equal(2);
      expect(outcome.stdout).to.equal('');
      expect(outcome.stderr).to.not.equal('');
    }
    const help = await cli(server.dataDir, '--help');
    expect(help.code).to.equal(0);
    expect(help.stderr).to.match(/usage: onerecord token/);
  });

  it('a data directory no server has used yet: exit 1 with an explanation, no stack trace', async () => {
    const empty = await mkdtemp(join(tmpdir(), 'onerecord-cli-'));
    try {
      const outcome = await cli(empty, 'token');
      expect(outcome.code).to.equal(1);
      expect(outcome.stdout).to.equal('');
      expect(outcome.stderr).to.match(/start the server once/);
      expect(outcome.stderr).to.not.match(/\n\s+at /);
    } finally {
      await rm(empty, { recursive: true, force: true });
    }
  });
});

describe('onerecord export (CLI)', () => {
  let server: TestServer;
  let out: string;
  before(async function () {
    this.timeout(60_000);
    server = await startTestServer();
    for (let i = 0; i < 5; i++) await createObject(server, piece(i));
    await server.running.embedded!.snapshot(); // the export reads a snapshot and the journal after it
    const object = await createObject(server, piece(2));
    await submit(server, object, change(object, 1, [add(object, 'goodsDescription', str('after the snapshot'))]));
    await server.stop();
    out = await mkdtemp(join(tmpdir(), 'onerecord-export-'));
  });
  after(async () => {
    await server.close();
    await rm(out, { recursive: true, force: true });
  });

  it('writes everything the data directory holds as N-Quads, to a file or to stdout', async function () {
    this.timeout(60_000);
    const file = join(out, 'all.nq');
    const exported = await cli(server.dataDir, 'export', '--out', file);
    expect(exported.code, exported.stderr).to.equal(0);
    expect(exported.stdout).to.equal('');
    const lines = (await readFile(file, 'utf8')).split('\n').filter(Boolean);
    expect(exported.stderr).to.equal(`exported ${lines.length} N-Quads lines from ${server.dataDir} to ${file}\n`);

    const { store } = await openStore(server.dataDir);
    try {
      // The hot store (latest revisions), then every revision in its own graph with its metadata.
      const history: string[] = [];
      for (const r of readRevisions(store.index)) {
        if (r.number === 1 && (await store.revision(r.object, 2))) continue; // listed again with the latest
        for (let n = 1; n <= r.number; n++) {
          const graph = namedNode(revisionGraph(r.object, n));
          history.push(...(await store.graphTriples(graph.value)).map((t) => quadToNq(quad(t.subject, t.predicate, t.object, graph))), ...revisionQuads((await store.revision(r.object, n))!).map(quadToNq));
        }
      }
      expect(history.some((line) => line.includes('?revision=1>'))).to.equal(true);
      const same = (text: string[]) => [...new Set(new Parser({ format: 'application/n-quads' }).parse(text.join('\n')).map(quadToNq))].sort();
      expect(same(lines)).to.deep.equal(same([...allQuads(store.index), ...history]));
    } finally {
      await store.close();
    }
    const piped = await cli(server.dataDir, 'export');
    expect(piped.code).to.equal(0);
    expect(piped.stdout).to.equal(await readFile(file, 'utf8'));

    const again = await cli(server.dataDir, 'export', '--out', file);
    expect(again.code).to.equal(1); // never overwrites a file
    expect(again.stderr).to.match(/EEXIST/);
  });

  it('options of another command are usage errors', async () => {
    for (const args of [['export', '--agent', OTHER_AGENT], ['token', '--out', 'x.nq'], ['export', 'extra']]) {
      const outcome = await cli(server.dataDir, ...args);
      expect(outcome.code, args.join(' ')).to.equal(2);
      expect(outcome.stdout).to.equal('');
    }
  });
});
