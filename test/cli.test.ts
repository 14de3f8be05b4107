import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { decodeJwt } from 'jose';
import type { BrowserContext } from 'playwright-core';
import { add, change, createObject, piece, str, submit } from './support/changes.js';
import { freePort, OTHER_AGENT, postJsonLd, startTestServer, type TestServer } from './support/server.js';
import { holderOf, startPeers } from './support/peers.js';
import { openChromium } from './support/chromium.js';
import { allQuads, openStore } from './support/store-data.js';
import { Parser } from 'n3';
import { namedNode, quad, quadToNq } from '../src/rdf/terms.js';
import { engineLatestQuads, readRevisions, revisionGraph, revisionQuads } from '../src/store/schema/revisions.js';
import { finishedQuad } from '../src/store/schema/finished-graphs.js';
import { toRevisionSubjects } from '../src/store/schema/revision-subjects.js';

const run = promisify(execFile);
const REPO = fileURLToPath(new URL('../../', import.meta.url));
const CLI = fileURLToPath(new URL('../src/cli.js', import.meta.url));
const PIECE = { '@context': { cargo: 'https://onerecord.iata.org/ns/cargo#' }, '@type': 'cargo:Piece' };
/** A config directory that does not exist: no profile of the user running the tests is read. */
const NO_PROFILE = join(tmpdir(), 'onerecord-cli-test-no-config');

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a script of the package as its own process with only PATH and `env` set, `input` on its stdin. */
function runScript(script: string, env: Record<string, string>, args: string[], input = ''): Promise<Outcome> {
  return new Promise((resolve) => {
    const options = { env: { PATH: process.env.PATH, ...env } };
    const child = execFile(process.execPath, [script, ...args], options, (err, stdout, stderr) => {
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
    child.stdin!.end(input);
  });
}

/** Runs the CLI (no BASE_URL, PORT or CONFIG_FILE; no profile of the user running the tests). */
const runCli = (env: Record<string, string>, args: string[], input = '') =>
  runScript(CLI, { XDG_CONFIG_HOME: NO_PROFILE, ...env }, args, input);

/** util-linux `script`, by its path: a test may run the CLI with a PATH that holds nothing else. */
const SCRIPT = '/usr/bin/script';
/** `args` as one word each for `sh -c`. */
const shellWords = (args: string[]) => args.map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' ');

/**
 * Runs the CLI on a pseudo-terminal (util-linux `script`), as a user at a terminal would: stdout and
 * stderr are one TTY, so `code` is the CLI's and `output` is what the terminal showed, lines ending in \r\n.
 */
function runCliOnTerminal(env: Record<string, string>, args: string[]): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    const command = shellWords([process.execPath, CLI, ...args]);
    execFile(
      SCRIPT,
      ['--quiet', '--return', '--command', command, '/dev/null'],
      { env: { PATH: process.env.PATH, XDG_CONFIG_HOME: NO_PROFILE, ...env } },
      (err, stdout) => {
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, output: stdout });
      },
    );
  });
}

/** A local command, beside the data directory. */
const cli = (dataDir: string, ...args: string[]) => runCli({ DATA_DIR: dataDir }, args);

/** A remote command against `server`, as its holder (or the partner) through ONERECORD_URL and ONERECORD_TOKEN. */
async function api(
  server: TestServer,
  args: string[],
  options: { agent?: 'holder' | 'other'; input?: string } = {},
): Promise<Outcome> {
  return runCli({ ONERECORD_URL: server.url, ONERECORD_TOKEN: await server.token(options.agent) }, args, options.input);
}

/** The error output of a refusal: the server's api:Error on one line, status first, title last; never a stack trace. */
function expectRefusal(outcome: Outcome, status: number, title: string, message?: RegExp): void {
  expect(outcome.code, outcome.stderr).to.equal(1);
  expect(outcome.stderr).to.match(new RegExp(`(^|\\s)${status}: [\\s\\S]+ \\(${title}\\)$`, 'm'));
  if (message) expect(outcome.stderr).to.match(message);
  expect(outcome.stderr).to.not.match(/\n\s+at /);
}

describe('onerecord token (CLI)', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  const withToken = (token: string, path: string, init: RequestInit = {}) =>
    server.request(path, {
      ...init,
      agent: 'none',
      headers: { ...(init.headers as Record<string, string>), Authorization: `Bearer ${token}` },
    });

  it("prints a token for the data holder that the server accepts, with the server's issuer", async () => {
    const { code, stdout } = await cli(server.dataDir, 'token');
    expect(code).to.equal(0);
    const token = stdout.trim();
    expect(stdout).to.equal(`${token}\n`);
    const claims = decodeJwt(token);
    expect(claims.iss).to.equal(`${server.url}/idp`);
    expect(claims.logistics_agent_uri).to.equal(server.running.services.holder);
    expect((await withToken(token, '/')).status).to.equal(200);
    const created = await withToken(token, '/logistics-objects', {
      method: 'POST',
      headers: { 'Content-Type': 'application/ld+json' },
      body: JSON.stringify(PIECE),
    });
    expect(created.status).to.equal(201);
  });

  it('--agent gives a token for that agent: authenticated, but not an internal actor', async () => {
    const { code, stdout } = await cli(server.dataDir, 'token', '--agent', OTHER_AGENT);
    expect(code).to.equal(0);
    const token = stdout.trim();
    expect(decodeJwt(token).logistics_agent_uri).to.equal(OTHER_AGENT);
    expect((await withToken(token, '/')).status).to.equal(200);
    const created = await withToken(token, '/logistics-objects', {
      method: 'POST',
      headers: { 'Content-Type': 'application/ld+json' },
      body: JSON.stringify(PIECE),
    });
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
    const { stdout } = await run('npx', ['--no-install', 'onerecord', 'token'], {
      cwd: REPO,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, DATA_DIR: server.dataDir },
    });
    expect((await withToken(stdout.trim(), '/')).status).to.equal(200);
  });

  it('usage errors exit with 2 and print the usage; nothing on stdout', async () => {
    for (const args of [
      [],
      ['tokens'],
      ['token', 'extra'],
      ['token', '--agent', 'not an IRI'],
      ['token', '--lifetime', '-5'],
      ['token', '--lifetime', 'soon'],
    ]) {
      const outcome = await cli(server.dataDir, ...args);
      expect(outcome.code, args.join(' ')).to.equal(2);
      expect(outcome.stdout).to.equal('');
      expect(outcome.stderr).to.not.equal('');
    }
  });

  it('--help (or -h) is an answer: on stdout, so it pages, with exit 0', async () => {
    for (const args of [['--help'], ['-h'], ['token', '--help'], ['export', '-h']]) {
      const help = await cli(server.dataDir, ...args);
      expect(help.code, args.join(' ')).to.equal(0);
      expect(help.stderr, args.join(' ')).to.equal('');
      expect(help.stdout, args.join(' ')).to.match(/^usage: onerecord /);
      expect(help.stdout, args.join(' ')).to.match(/[^\n]\n$/);
    }
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
      // The hot store (latest revisions), then every revision in its own graph (under its own subjects) with its
      // metadata, and each object's mark of its latest revision (what a SPARQL engine backend keeps).
      const history: string[] = [];
      for (const r of readRevisions(store.index)) {
        if (r.number === 1 && (await store.revision(r.object, 2))) continue; // listed again with the latest
        history.push(...engineLatestQuads(r).map(quadToNq));
        for (let n = 1; n <= r.number; n++) {
          const graph = namedNode(revisionGraph(r.object, n));
          history.push(
            ...toRevisionSubjects(await store.graphTriples(graph.value), graph.value).map((t) =>
              quadToNq(quad(t.subject, t.predicate, t.object, graph)),
            ),
            ...revisionQuads((await store.revision(r.object, n))!).map(quadToNq),
          );
        }
      }
      expect(history.some((line) => line.includes('?revision=1>'))).to.equal(true);
      // Then the decided ChangeRequests from the archive, each marked finished (what a SPARQL engine backend needs).
      const decided = await store.finishedRequests();
      expect(decided).to.not.have.length(0);
      for (const request of decided) {
        const graph = namedNode(request.iri);
        history.push(
          ...(await store.graphTriples(request.iri)).map((t) =>
            quadToNq(quad(t.subject, t.predicate, t.object, graph)),
          ),
          quadToNq(finishedQuad(request.iri)),
        );
      }
      const same = (text: string[]) =>
        [...new Set(new Parser({ format: 'application/n-quads' }).parse(text.join('\n')).map(quadToNq))].sort();
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
    for (const args of [
      ['export', '--agent', OTHER_AGENT],
      ['token', '--out', 'x.nq'],
      ['export', 'extra'],
    ]) {
      const outcome = await cli(server.dataDir, ...args);
      expect(outcome.code, args.join(' ')).to.equal(2);
      expect(outcome.stdout).to.equal('');
    }
  });
});

describe('onerecord remote commands (CLI against a running server)', function () {
  this.timeout(60_000);
  let server: TestServer;
  let files: string;
  before(async () => {
    server = await startTestServer();
    files = await mkdtemp(join(tmpdir(), 'onerecord-cli-files-'));
  });
  after(async () => {
    await server.close();
    await rm(files, { recursive: true, force: true });
  });

  const file = async (name: string, text: string) => {
    await writeFile(join(files, name), text);
    return join(files, name);
  };
  const triplesOf = async (iri: string, agent: 'holder' | 'other' = 'holder') => {
    const res = await server.request(iri, { headers: { Accept: 'application/n-triples' }, agent });
    expect(res.status, iri).to.equal(200);
    return { revision: res.headers.get('revision'), text: await res.text() };
  };

  it('every command has --help with an example; misuse exits 2 with the usage line', async () => {
    const names = [...(await cli(server.dataDir, '--help')).stdout.matchAll(/^(?:usage:)?\s+onerecord (\S+)/gm)].map(
      (m) => m[1],
    );
    expect(names).to.include.members([
      'token',
      'export',
      'get',
      'create',
      'import',
      'change',
      'requests',
      'accept',
      'reject',
      'revoke',
      'events',
      'event',
      'subscribe',
      'grant',
      'query',
      'open',
    ]);
    // Each run is a process of its own: started all at once, checked in order.
    const helps = await Promise.all(names.map((name) => cli(server.dataDir, name, '--help')));
    for (const [i, name] of names.entries()) {
      const help = helps[i];
      expect(help.code, name).to.equal(0);
      expect(help.stderr, name).to.equal('');
      expect(help.stdout).to.match(new RegExp(`^usage: onerecord ${name} `));
      expect(help.stdout).to.match(/\nexample:\n {2}.*onerecord /);
    }
    const misuses = [
      ['get'],
      ['get', 'a', 'b'],
      ['get', 'x', '--format', 'xml'],
      ['get', 'x', '--revision', '0'],
      ['change', 'x'],
      ['change', 'x', '--add', 'novalue'],
      ['create', 'piece.txt'],
      ['import', 'nothing-here'],
      ['grant', 'x', OTHER_AGENT, '--permission', 'READ'],
      ['query', 'q.rq', '--format', 'table', '--accept', 'text/csv'],
      ['open', 'a', 'b'],
    ];
    const outcomes = await Promise.all(misuses.map((args) => api(server, args)));
    for (const [i, args] of misuses.entries()) {
      const outcome = outcomes[i];
      expect(outcome.code, args.join(' ')).to.equal(2);
      expect(outcome.stdout).to.equal('');
      expect(outcome.stderr).to.match(new RegExp(`usage: onerecord ${args[0]} `));
    }
  });

  it('create and get: a JSON-LD or Turtle file becomes an object; get prints it in each format, by revision', async () => {
    const jsonld = await file('piece.jsonld', JSON.stringify({ ...PIECE, 'cargo:goodsDescription': 'Books' }));
    const created = await api(server, ['create', jsonld]);
    expect(created.code, created.stderr).to.equal(0);
    const piece = created.stdout.trim();
    expect(piece).to.match(new RegExp(`^${server.url}/logistics-objects/`));
    expect((await triplesOf(piece)).text).to.include('"Books"');
    const ttl = await file(
      'piece.ttl',
      '@prefix cargo: <https://onerecord.iata.org/ns/cargo#> .\n<piece-from-turtle> a cargo:Piece ; cargo:goodsDescription "Turtle" .\n',
    );
    expect((await api(server, ['create', ttl])).stdout.trim()).to.equal(
      `${server.url}/logistics-objects/piece-from-turtle`,
    );

    const id = piece.split('/').pop()!;
    const json = JSON.parse((await api(server, ['get', id])).stdout) as Record<string, unknown>;
    expect(json['cargo:goodsDescription']).to.equal('Books');
    expect((await api(server, ['get', piece, '--format', 'turtle'])).stdout).to.match(/cargo:goodsDescription "Books"/);
    await submit(server, piece, change(piece, 1, [add(piece, 'shippingMarks', str('More books'))]));
    const first = await api(server, ['get', piece, '--revision', '1', '--format', 'nt']);
    expect(
      new Parser({ format: 'N-Triples' })
        .parse(first.stdout)
        .filter((t) => t.predicate.value.endsWith('#goodsDescription'))
        .map((t) => t.object.value),
    ).to.deep.equal(['Books']);
    expect((await api(server, ['get', piece, '--at', new Date().toISOString()])).stdout).to.include('More books');

    expectRefusal(await api(server, ['get', piece, '--revision', '9']), 404, 'Resource not found', /revision 9/);
    const refused = await api(server, [
      'create',
      await file('bad.jsonld', JSON.stringify({ ...PIECE, '@type': 'cargo:NoSuchClass' })),
    ]);
    expectRefusal(refused, 400, 'Invalid body request', /NoSuchClass is not a subclass of cargo:LogisticsObject/);
    expect(refused.stdout).to.equal('');
  });

  it("change: builds the Change on the current revision; a Change that cannot apply shows the ChangeRequest's error", async () => {
    const piece = await createObject(server, {
      ...PIECE,
      'cargo:goodsDescription': 'Books',
      'cargo:coload': false,
    } as Record<string, unknown>);
    await submit(server, piece, change(piece, 1, [add(piece, 'shippingMarks', str('first'))]));
    const changed = await api(server, [
      'change',
      piece,
      '--delete',
      'goodsDescription=Books',
      '--add',
      'cargo:goodsDescription=Magazines',
      '--delete',
      'coload=false',
      '--add',
      'coload=true',
      '--add',
      'shippingMarks=second',
    ]);
    expect(changed.code, changed.stderr).to.equal(0);
    expect(changed.stdout).to.match(new RegExp(`^${server.url}/action-requests/\\S+\\n$`));
    expect(changed.stderr).to.equal('status: REQUEST_ACCEPTED\n');
    const now = await triplesOf(piece);
    expect(now.revision).to.equal('3');
    expect(now.text)
      .to.include('"Magazines"')
      .and.include('"true"^^<http://www.w3.org/2001/XMLSchema#boolean>')
      .and.include('"second"')
      .and.not.include('"Books"');

    const failed = await api(server, ['change', piece, '--delete', 'goodsDescription=Novels']);
    expect(failed.code).to.equal(1);
    expect(failed.stderr).to.match(/^status: REQUEST_FAILED\n {2}422: .*no such value.* \(Unprocessable content\)\n$/);
    expect((await triplesOf(piece)).revision).to.equal('3');
    expectRefusal(
      await api(server, ['change', `${server.url}/logistics-objects/missing`, '--add', 'goodsDescription=x']),
      404,
      'Resource not found',
    );
  });

  it("grant, then requests, accept, reject and revoke: a partner's changes wait for the holder", async () => {
    const piece = await createObject(server, { ...PIECE, 'cargo:goodsDescription': 'Books' } as Record<
      string,
      unknown
    >);
    expect((await server.request(piece, { agent: 'other' })).status).to.equal(403);
    const granted = await api(server, [
      'grant',
      piece,
      OTHER_AGENT,
      '--permission',
      'GET_LOGISTICS_OBJECT,POST_LOGISTICS_EVENT',
    ]);
    expect(granted.code, granted.stderr).to.equal(0);
    expect(granted.stdout.trim().split('\n')).to.have.length(2); // reading the object and posting its events are different modes
    expect((await server.request(piece, { agent: 'other' })).status).to.equal(200);
    expect((await api(server, ['event', piece, 'ARR'], { agent: 'other' })).code).to.equal(0);

    const proposals = [];
    for (const mark of ['one', 'two', 'three']) {
      const proposed = await api(server, ['change', piece, '--add', `shippingMarks=${mark}`], { agent: 'other' });
      expect(proposed.code, proposed.stderr).to.equal(0);
      expect(proposed.stderr).to.equal('status: REQUEST_PENDING\n');
      proposals.push(proposed.stdout.trim());
    }
    const pending = await api(server, ['requests', '--pending', '--object', piece]);
    expect(pending.stdout).to.match(/[^\n]\n$/); // the shell's prompt starts on a line of its own
    expect(pending.stdout.split('\n')[0]).to.match(/^request\s+type\s+status\s+object\s+requested by\s+requested at$/);
    expect(
      pending.stdout
        .trim()
        .split('\n')
        .slice(1)
        .map((line) => line.split(/\s+/).slice(0, 5)),
    ).to.deep.equal(proposals.map((iri) => [iri, 'ChangeRequest', 'REQUEST_PENDING', piece, OTHER_AGENT]));
    const asJsonLd = JSON.parse((await api(server, ['requests', '--pending', '--format', 'jsonld'])).stdout) as Record<
      string,
      unknown
    >;
    expect(asJsonLd['@type']).to.equal('api:Collection');

    const accepted = await api(server, ['accept', proposals[0].split('/').pop()!]);
    expect(accepted.code, accepted.stderr).to.equal(0);
    expect(accepted.stdout.trim()).to.equal(proposals[0]);
    expect(accepted.stderr).to.equal('status: REQUEST_ACCEPTED\n');
    expect((await triplesOf(piece)).text).to.include('"one"');
    // Accepting the first rejected the others, built on the same revision.
    expectRefusal(await api(server, ['accept', proposals[1]]), 422, 'Unprocessable content');

    const fourth = (
      await api(server, ['change', piece, '--add', 'shippingMarks=four'], { agent: 'other' })
    ).stdout.trim();
    const fifth = (
      await api(server, ['change', piece, '--add', 'shippingMarks=five'], { agent: 'other' })
    ).stdout.trim();
    const rejected = await api(server, ['reject', fourth]);
    expect([rejected.code, rejected.stderr]).to.deep.equal([0, 'status: REQUEST_REJECTED\n']);
    const revoked = await api(server, ['revoke', fifth], { agent: 'other' });
    expect([revoked.code, revoked.stderr]).to.deep.equal([0, 'status: REQUEST_REVOKED\n']);
    expect((await triplesOf(piece)).text)
      .to.not.include('"four"')
      .and.not.include('"five"');
    expect((await api(server, ['requests', '--pending', '--object', piece])).stdout.trim().split('\n')).to.have.length(
      1,
    );
    expectRefusal(await api(server, ['requests'], { agent: 'other' }), 403, 'Not authorized to perform action');
  });

  it('event and events: posts a Logistics Event, lists and filters them', async () => {
    const piece = await createObject(server);
    const posted = await api(server, [
      'event',
      piece,
      'DEP',
      '--date',
      '2024-05-01T10:00:00Z',
      '--time-type',
      'ACTUAL',
    ]);
    expect(posted.code, posted.stderr).to.equal(0);
    const event = posted.stdout.trim();
    expect(event).to.match(new RegExp(`^${piece}/logistics-events/`));
    const stored = await (await server.request(event, { headers: { Accept: 'application/n-triples' } })).text();
    expect(stored).to.include('StatusCode#DEP>').and.include('"2024-05-01T10:00:00Z"').and.include('cargo#ACTUAL>');
    expect(
      (await api(server, ['event', piece, 'https://onerecord.iata.org/ns/code-lists/StatusCode#ARR'])).code,
    ).to.equal(0);

    const rows = (args: string[]) =>
      api(server, ['events', piece, ...args]).then((o) =>
        o.stdout
          .trim()
          .split('\n')
          .slice(1)
          .map((line) => line.split(/\s+/).slice(0, 3)),
      );
    expect(await rows([])).to.have.length(2);
    expect(await rows(['--code', 'DEP'])).to.deep.equal([[event, 'DEP', '2024-05-01T10:00:00Z']]);
    expect(await rows(['--since', '2999-01-01T00:00:00Z'])).to.deep.equal([]);
    expect(await rows(['--limit', '1'])).to.have.length(1);
    const turtle = await api(server, ['events', piece, '--format', 'turtle']);
    expect(turtle.stdout, turtle.stderr).to.include('api:Collection');

    expectRefusal(
      await api(server, ['event', piece, 'DEP', '--date', 'yesterday']),
      400,
      'Invalid body request',
      /eventDate|dateTime/,
    );
    expectRefusal(
      await api(server, ['events', piece, '--since', 'soon']),
      400,
      'Invalid query parameter request',
      /created-after/,
    );
  });

  it("query: a query from a file or stdin, as TSV, a table, CSV or SPARQL JSON; a bad query shows the server's error", async () => {
    await createObject(server, { ...PIECE, 'cargo:goodsDescription': 'queried' } as Record<string, unknown>);
    const text =
      'PREFIX cargo: <https://onerecord.iata.org/ns/cargo#>\nSELECT ?d WHERE { ?p cargo:goodsDescription ?d FILTER(?d = "queried") }\n';
    expect((await api(server, ['query', '-'], { input: text })).stdout).to.equal('?d\n"queried"\n');
    expect((await api(server, ['query', await file('q.rq', text), '--format', 'table'])).stdout).to.equal(
      'd\nqueried\n',
    );
    expect((await api(server, ['query', '-', '--format', 'csv'], { input: text })).stdout.replace(/\r/g, '')).to.equal(
      'd\nqueried\n',
    );
    const json = JSON.parse((await api(server, ['query', '-', '--format', 'json'], { input: text })).stdout) as {
      results: { bindings: unknown[] };
    };
    expect(json.results.bindings).to.have.length(1);
    expectRefusal(
      await api(server, ['query', '-'], { input: 'SELECT nonsense' }),
      400,
      'Invalid (body|query parameter) request',
    );
  });

  it('ONERECORD_URL and ONERECORD_TOKEN override a profile file; a profile may hold client credentials; an unreachable server is said so', async () => {
    const piece = await createObject(server);
    const unreachable = `http://127.0.0.1:${await freePort()}`;
    const withCredentials = await file(
      'partner.json',
      JSON.stringify({ url: server.url, clientId: 'partner', clientSecret: 'partner-secret' }),
    );
    // The partner's token: it may not read the holder's object.
    expectRefusal(
      await runCli({}, ['get', piece, '--profile', withCredentials]),
      403,
      'Not authorized to perform action',
    );
    const holder = await file('holder.json', JSON.stringify({ url: unreachable, token: await server.token() }));
    const overridden = await runCli({ ONERECORD_URL: server.url }, [
      'get',
      piece.split('/').pop()!,
      '--profile',
      holder,
    ]);
    expect(overridden.code, overridden.stderr).to.equal(0);
    const down = await runCli({}, ['get', piece.split('/').pop()!, '--profile', holder]);
    expect(down.code).to.equal(1);
    expect(down.stderr).to.match(/^onerecord: cannot reach http:\/\/127\.0\.0\.1:\d+: ECONNREFUSED\n$/);
    // The default profile, where XDG_CONFIG_HOME says.
    const config = await mkdtemp(join(tmpdir(), 'onerecord-cli-config-'));
    try {
      await mkdir(join(config, 'onerecord'));
      await writeFile(
        join(config, 'onerecord', 'profile.json'),
        JSON.stringify({ url: server.url, token: await server.token() }),
      );
      expect((await runCli({ XDG_CONFIG_HOME: config }, ['get', piece])).code).to.equal(0);
    } finally {
      await rm(config, { recursive: true, force: true });
    }
    const misspelt = await runCli({}, [
      'get',
      piece,
      '--profile',
      await file('bad.json', JSON.stringify({ url: server.url, tokn: 'x' })),
    ]);
    expect(misspelt.code).to.equal(2);
    expect(misspelt.stderr).to.match(/bad\.json: .*tokn/);
    expect((await runCli({}, ['get', piece, '--profile', join(files, 'none.json')])).code).to.equal(2);
    const wrongToken = await runCli({ ONERECORD_URL: server.url, ONERECORD_TOKEN: 'not-a-token' }, ['get', piece]);
    expectRefusal(wrongToken, 401, 'Not authenticated or expired token');
  });
});

describe('onerecord import (CLI against a running server)', function () {
  this.timeout(60_000);
  let server: TestServer;
  let files: string;
  before(async () => {
    server = await startTestServer();
    files = await mkdtemp(join(tmpdir(), 'onerecord-cli-import-'));
  });
  after(async () => {
    await server.close();
    await rm(files, { recursive: true, force: true });
  });

  const described = (text: string, extra: Record<string, unknown> = {}) =>
    JSON.stringify({ ...PIECE, 'cargo:goodsDescription': text, ...extra });
  const status = async (iri: string) => (await server.request(iri)).status;

  it("a directory: creates each file's object, lists what was refused with the server's error, and resumes without duplicates", async () => {
    const dir = join(files, 'objects');
    await mkdir(dir);
    await writeFile(join(dir, 'a.jsonld'), described('a', { '@id': 'dir-a' }));
    await writeFile(
      join(dir, 'b.ttl'),
      '@prefix cargo: <https://onerecord.iata.org/ns/cargo#> .\n<dir-b> a cargo:Piece ; cargo:goodsDescription "b" .\n',
    );
    await writeFile(join(dir, 'c.json'), described('no id'));
    await writeFile(join(dir, 'd.jsonld'), described('d', { '@type': 'cargo:NoSuchClass' }));
    await writeFile(join(dir, 'notes.txt'), 'not an object');

    const first = await api(server, ['import', dir]);
    expect(first.code).to.equal(1);
    expect(first.stdout).to.equal('');
    expect(first.stderr).to.not.include('\r'); // no progress bar when stderr is not a terminal
    expect(first.stderr).to.match(
      new RegExp(
        `^${dir}: 3 created, 0 already there, 1 refused, of 4 \\(\\d+\\.\\d s\\)\\nrefused:\\n {2}d\\.jsonld: 400: .*NoSuchClass.* \\(Invalid body request\\)\\n$`,
      ),
    );
    expect(await status(`${server.url}/logistics-objects/dir-a`)).to.equal(200);
    expect(await status(`${server.url}/logistics-objects/dir-b`)).to.equal(200);
    const recorded = (await readFile(`${dir}.import-state`, 'utf8')).trim().split('\n');
    expect(recorded).to.have.length(1); // only the object without @id needs the state file
    expect(await status(recorded[0].split(' ')[1])).to.equal(200);

    await writeFile(join(dir, 'd.jsonld'), described('d fixed'));
    const again = await api(server, ['import', dir]);
    expect(again.code, again.stderr).to.equal(0);
    expect(again.stderr).to.match(/: 1 created, 3 already there, 0 refused, of 4 /);
    const count = await server.request('/sparql', {
      method: 'POST',
      headers: { 'Content-Type': 'application/sparql-query', Accept: 'text/csv' },
      body: 'SELECT (COUNT(?p) AS ?n) WHERE { ?p <https://onerecord.iata.org/ns/cargo#goodsDescription> "no id" }',
    });
    expect((await count.text()).trim().split(/\r?\n/)[1]).to.equal('1');
  });

  it('an .ndjson file, one object per line; an .nq file, one object per named graph', async () => {
    const ndjson = join(files, 'pieces.ndjson');
    await writeFile(
      ndjson,
      `${described('line 1', { '@id': 'nd-1' })}\n\n${described('line 3', { '@id': 'nd-3' })}\n{"broken": \n`,
    );
    const lines = await api(server, ['import', ndjson]);
    expect(lines.code).to.equal(1);
    expect(lines.stderr).to.match(
      /: 2 created, 0 already there, 1 refused, of 3 [^\n]*\nrefused:\n {2}line 4: 400: .* \(Invalid body request\)\n$/,
    );
    expect(await status(`${server.url}/logistics-objects/nd-3`)).to.equal(200);

    // An object with an embedded node, as the server stores it (internal: ids), under a new IRI, and one of its events.
    const source = await createObject(server);
    const stored = await (await server.request(source, { headers: { Accept: 'application/n-triples' } })).text();
    const target = `${server.url}/logistics-objects/from-nq`;
    const graph = (text: string, name: string) =>
      text
        .trim()
        .split('\n')
        .map((line) => `${line.slice(0, -1)}<${name}> .`)
        .join('\n');
    const event = `<${target}/logistics-events/e1> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <https://onerecord.iata.org/ns/cargo#LogisticsEvent> <${target}/logistics-events/e1> .`;
    const nq = join(files, 'objects.nq');
    await writeFile(
      nq,
      `${graph(
        stored
          .split(source)
          .join(target)
          .replace(/^.*#hasRevision.*\n|^.*#hasLatestRevision.*\n/gm, ''),
        target,
      )}\n${event}\n`,
    );
    const quads = await api(server, ['import', nq]);
    expect(quads.code, quads.stderr).to.equal(0);
    expect(quads.stderr).to.match(
      /^left out 1 graphs that are not Logistics Objects .*\n.*: 1 created, 0 already there, 0 refused, of 1 /,
    );
    const copied = await (await server.request(target, { headers: { Accept: 'application/n-triples' } })).text();
    expect(copied).to.include('numericalValue> "20"');
    expect((await api(server, ['import', nq])).stderr).to.match(/: 0 created, 1 already there, 0 refused, of 1 /);
  });

  it('on a terminal, a progress bar with the count, the rate and the ETA, erased before the summary', async () => {
    const ndjson = join(files, 'progress.ndjson');
    await writeFile(
      ndjson,
      Array.from({ length: 40 }, (_, i) => described(`progress ${i}`, { '@id': `progress-${i}` })).join('\n'),
    );
    const { code, output } = await runCliOnTerminal(
      { ONERECORD_URL: server.url, ONERECORD_TOKEN: await server.token() },
      ['import', ndjson],
    );
    expect(code, output).to.equal(0);
    const bars = output.split('\r').filter((line) => line.startsWith('['));
    expect(bars.length, output).to.be.greaterThan(0);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the bar ends with the erase-line escape ESC [K
    for (const bar of bars) expect(bar).to.match(/^\[[= ]{30}\] \d+\/40 \d+% {2}\d+\.\d\/s {2}ETA \d+:\d{2}\x1b\[K$/);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the bar ends with the erase-line escape ESC [K
    expect(bars.at(-1)).to.match(/^\[={30}\] 40\/40 100% {2}\d+\.\d\/s {2}ETA 0:00\x1b\[K$/);
    // The bar's line is cleared, then the summary is the last thing on the terminal.
    expect(output).to.match(
      new RegExp(
        `\\x1b\\[K\\r\\x1b\\[K${ndjson}: 40 created, 0 already there, 0 refused, of 40 \\(\\d+\\.\\d s\\)\\r\\n$`,
      ),
    );
  });

  it('a server that cannot be reached stops the import: exit 1, and a run later goes on', async () => {
    const ndjson = join(files, 'later.ndjson');
    await writeFile(ndjson, `${described('later', { '@id': 'later-1' })}\n`);
    const down = await runCli(
      { ONERECORD_URL: `http://127.0.0.1:${await freePort()}`, ONERECORD_TOKEN: await server.token() },
      ['import', ndjson],
    );
    expect(down.code).to.equal(1);
    expect(down.stderr).to.match(
      /: 0 created, 0 already there, 0 refused, of 1 [^\n]*\nstopped: cannot reach http:\/\/127\.0\.0\.1:\d+: ECONNREFUSED; run the same command again to go on\n$/,
    );
    expect((await api(server, ['import', ndjson])).code).to.equal(0);
    expect(await status(`${server.url}/logistics-objects/later-1`)).to.equal(200);
  });
});

describe('onerecord subscribe (CLI, two servers)', function () {
  this.timeout(60_000);
  let subscriber: TestServer;
  let publisher: TestServer;
  before(async () => {
    [subscriber, publisher] = await startPeers(2);
  });
  after(async () => {
    await Promise.all([subscriber?.close(), publisher?.close()]);
  });

  it("subscribes this server at another, with a token from the data directory; a refusal shows the server's error", async () => {
    const piece = await createObject(publisher);
    const granted = await api(publisher, ['grant', piece, holderOf(subscriber)]);
    expect(granted.code, granted.stderr).to.equal(0);
    // Beside the subscriber's data directory: no token or profile needed.
    const beside = { DATA_DIR: subscriber.dataDir, ONERECORD_URL: subscriber.url };
    const subscribed = await runCli(beside, ['subscribe', piece]);
    expect(subscribed.code, subscribed.stderr).to.equal(0);
    const request = (JSON.parse(subscribed.stdout) as { request: string }).request;
    expect(request).to.match(new RegExp(`^${publisher.url}/action-requests/`));
    expect(
      ((await (await publisher.request(request)).json()) as Record<string, { '@id': string }>)['api:hasRequestStatus'][
        '@id'
      ],
    ).to.equal('https://onerecord.iata.org/ns/api#REQUEST_ACCEPTED');
    const refused = await runCli(beside, ['subscribe', 'https://onerecord.iata.org/ns/cargo#Piece', '--type']);
    expect(refused.code).to.equal(1);
    expect(refused.stderr).to.match(/^\d{3}: .+ \(.+\)\n$/);
  });
});

describe('onerecord open (CLI, the link loaded in headless Chromium)', function () {
  this.timeout(60_000);
  let server: TestServer;
  let browser: { context: BrowserContext; close(): Promise<void> };
  let fakeOpener: string;
  before(async () => {
    server = await startTestServer();
    browser = await openChromium();
    // An xdg-open that writes down the URL it was given, in place of a desktop's.
    fakeOpener = await mkdtemp(join(tmpdir(), 'onerecord-cli-opener-'));
    await writeFile(join(fakeOpener, 'xdg-open'), '#!/bin/sh\nprintf %s "$1" > "$OPENED"\n', { mode: 0o755 });
  });
  after(async () => {
    await browser?.close();
    await server?.close();
    await rm(fakeOpener, { recursive: true, force: true });
  });

  /** Loads `link` in a fresh page; resolves once the console is signed in. */
  const load = async (link: string) => {
    const page = await browser.context.newPage();
    await page.goto(link);
    await page.waitForSelector('#nav:not([hidden])');
    return page;
  };

  it('prints a link that signs the console in on the object given, or on the object list', async () => {
    const piece = await createObject(server);
    const outcome = await api(server, ['open', piece.split('/').pop()!]);
    expect(outcome.code, outcome.stderr).to.equal(0);
    const link = outcome.stdout.trim();
    expect(outcome.stdout).to.equal(`${link}\n`);
    expect(link.startsWith(`${server.url}/console#token=`)).to.equal(true);
    const page = await load(link);
    await page.waitForSelector('#revision-info');
    expect(await page.textContent('h1.object-title .iri')).to.equal(piece);
    expect(await page.textContent('#revision-info')).to.match(/^Revision 1 of 1/);
    expect(page.url()).to.equal(`${server.url}/console#/object?iri=${encodeURIComponent(piece)}`);
    await page.close();

    const list = await load((await api(server, ['open'])).stdout.trim());
    await list.waitForSelector(`#object-list a[title="${piece}"]`);
    expect(list.url()).to.equal(`${server.url}/console#/objects`);
    await list.close();
  });

  it('--browser opens the link with xdg-open on a terminal, never when stdout is piped', async () => {
    const opened = join(fakeOpener, 'opened');
    const env = {
      ONERECORD_URL: server.url,
      ONERECORD_TOKEN: await server.token(),
      OPENED: opened,
      PATH: `${fakeOpener}:${process.env.PATH}`,
    };
    const piped = await runCli(env, ['open', '--browser']);
    expect(piped.code, piped.stderr).to.equal(0);
    expect(existsSync(opened)).to.equal(false);
    const shown = await runCliOnTerminal(env, ['open', '--browser']);
    expect(shown.code, shown.output).to.equal(0);
    for (let i = 0; i < 50 && !existsSync(opened); i++) await new Promise((r) => setTimeout(r, 20));
    expect(shown.output).to.equal(`${await readFile(opened, 'utf8')}\r\n`);
    const without = await runCliOnTerminal({ ...env, PATH: '/nonexistent' }, ['open', '--browser']);
    expect(without.code).to.equal(0);
    expect(without.output).to.match(/^http:\/\/\S+\r\nno xdg-open found: open the link above yourself\r\n$/);
  });
});

describe("the scripts' command lines (virtuoso/cli.js, cluster/cli.js)", () => {
  /** These calls stop at the command line, before any engine or server starts. */
  const scriptCli = (name: string, args: string[]) =>
    runScript(fileURLToPath(new URL(`../scripts/${name}/cli.js`, import.meta.url)), {}, args);

  for (const name of ['virtuoso', 'cluster']) {
    it(`${name}: --help (or -h) prints the usage on stdout, exit 0; misuse prints it on stderr, exit 2`, async () => {
      for (const args of [['--help'], ['-h'], ['start', '--help']]) {
        const help = await scriptCli(name, args);
        expect(help.code, args.join(' ')).to.equal(0);
        expect(help.stderr, args.join(' ')).to.equal('');
        expect(help.stdout, args.join(' ')).to.match(new RegExp(`^usage: node dist/scripts/${name}/cli\\.js start `));
      }
      const misuses = [[], ['begin', '--dir', 'd'], ['start'], ['stop', '--dir'], ['stop', '--dir', 'd', '--verbose']];
      for (const args of misuses) {
        const misuse = await scriptCli(name, args);
        expect(misuse.code, args.join(' ')).to.equal(2);
        expect(misuse.stdout, args.join(' ')).to.equal('');
        expect(misuse.stderr, args.join(' ')).to.match(/\nusage: node dist\/scripts\//);
      }
    });
  }
});
