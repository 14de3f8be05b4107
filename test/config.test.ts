import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect } from 'chai';
import {
  ConfigError,
  configurationTable,
  envVarName,
  loadConfig,
  readmeConfigurationTable,
  settings,
} from '../src/config.js';

const run = promisify(execFile);
const README = fileURLToPath(new URL('../../README.md', import.meta.url));
const MAIN = fileURLToPath(new URL('../src/main.js', import.meta.url));

function refusal(env: NodeJS.ProcessEnv): string {
  try {
    loadConfig(env);
  } catch (err) {
    expect(err).to.be.instanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('the configuration was accepted');
}

describe('configuration', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'onerecord-config-'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  const file = async (name: string, content: unknown) => {
    const path = join(dir, name);
    await writeFile(path, typeof content === 'string' ? content : JSON.stringify(content));
    return path;
  };

  it("the README's configuration table is the one generated from the schema (npm run config:table)", () => {
    expect(readmeConfigurationTable(readFileSync(README, 'utf8'))).to.equal(configurationTable());
  });

  it('every setting has an env var, named after its path unless it names its own', () => {
    const all = settings();
    expect(all.map((s) => s.env)).to.include.members([
      'PORT',
      'HOST',
      'BASE_URL',
      'DATA_DIR',
      'DECISION_POLICY',
      'TRUSTED_ISSUERS',
      'OUTBOUND_TIMEOUT_MS',
      'LIMITS_BODY_BYTES',
      'LOG_LEVEL',
    ]);
    const ownNames = new Map([['http.cors.allowedOrigins', 'CORS_ALLOWED_ORIGINS']]);
    for (const s of all) expect(s.env).to.equal(ownNames.get(s.path) ?? envVarName(s.path));
    expect(new Set(all.map((s) => s.env)).size).to.equal(all.length);
  });

  it('defaults make a complete configuration', () => {
    const config = loadConfig({});
    expect(config.port).to.equal(8080);
    expect(config.baseUrl).to.equal('http://localhost:8080');
    expect(config.dataDir).to.equal(resolve('./data'));
    expect(config.limits).to.deep.include({ bodyBytes: 1048576, triples: 10000, depth: 32, iriLength: 2048 });
    expect(config.journal.fsync).to.equal(true);
    expect(config.logLevel).to.equal('info');
  });

  it('env vars of every type are read: numbers, booleans, enums, JSON lists', () => {
    const issuers = [
      {
        issuer: 'https://kc.example.com/realms/1r',
        jwksUrl: 'https://kc.example.com/realms/1r/protocol/openid-connect/certs',
      },
    ];
    const config = loadConfig({
      PORT: '9000',
      BASE_URL: 'https://1r.example.com/',
      JOURNAL_FSYNC: 'false',
      DECISION_POLICY: 'manual',
      TRUSTED_ISSUERS: JSON.stringify(issuers),
      LIMITS_BODY_BYTES: '2048',
      INTERNAL_AGENTS: '["https://1r.example.com/logistics-objects/ops"]',
    });
    expect(config.port).to.equal(9000);
    expect(config.baseUrl).to.equal('https://1r.example.com');
    expect(config.journal.fsync).to.equal(false);
    expect(config.decisionPolicy).to.equal('manual');
    expect(config.trustedIssuers).to.deep.equal(issuers);
    expect(config.limits.bodyBytes).to.equal(2048);
    expect(config.limits.triples).to.equal(10000);
    expect(config.internalAgents).to.deep.equal(['https://1r.example.com/logistics-objects/ops']);
  });

  it('a list of text is read from an env var comma-separated or as JSON (CORS_ALLOWED_ORIGINS)', () => {
    const origins = ['https://app.example.com', 'http://localhost:5173'];
    const allowed = (text?: string) => loadConfig({ CORS_ALLOWED_ORIGINS: text }).http.cors.allowedOrigins;
    expect(allowed()).to.deep.equal([]);
    expect(allowed('https://app.example.com, http://localhost:5173')).to.deep.equal(origins);
    expect(allowed(JSON.stringify(origins))).to.deep.equal(origins);
    expect(allowed('*')).to.deep.equal(['*']);
    const agents = ['https://a.example/lo/a', 'https://b.example/lo/b'];
    expect(loadConfig({ INTERNAL_AGENTS: agents.join(',') }).internalAgents).to.deep.equal(agents);
  });

  it('an origin with a path, a trailing slash or capitals is refused: browsers send none', () => {
    const refused = /http\.cors\.allowedOrigins\.0 \(from env CORS_ALLOWED_ORIGINS\): expected an origin/;
    const notOrigins = ['https://app.example/', 'https://app.example/x', 'https://App.example', 'app.example'];
    for (const origin of notOrigins) {
      expect(refusal({ CORS_ALLOWED_ORIGINS: origin }), origin).to.match(refused);
    }
  });

  it('the file is read, env vars win over it, and nested defaults survive a partial object', async () => {
    const path = await file('layers.json', { port: 9100, limits: { depth: 8 }, holderName: 'Air Example' });
    const config = loadConfig({ CONFIG_FILE: path, PORT: '9200' });
    expect(config.port).to.equal(9200);
    expect(config.holderName).to.equal('Air Example');
    expect(config.limits).to.deep.include({
      bodyBytes: 1048576,
      triples: 10000,
      depth: 8,
      iriLength: 2048,
      contextTerms: 2000,
    });
  });

  it('an unknown key in the file stops the start, naming the key and the file', async () => {
    const path = await file('typo.json', { journal: { fsnyc: false }, prot: 80 });
    const message = refusal({ CONFIG_FILE: path });
    expect(message).to.include(`journal.fsnyc (from file ${path}): unknown setting`);
    expect(message).to.include(`prot (from file ${path}): unknown setting`);
  });

  it('an unknown key inside a list entry is refused too', async () => {
    const path = await file('issuers.json', {
      trustedIssuers: [{ issuer: 'x', jwksUrl: 'https://x.example/jwks', audiance: 'y' }],
    });
    expect(refusal({ CONFIG_FILE: path })).to.include(`trustedIssuers.0.audiance (from file ${path}): unknown setting`);
  });

  it('wrong types and out-of-range values name the key and the env var', () => {
    expect(refusal({ PORT: 'eighty' })).to.match(/port \(from env PORT\): .*expected number/);
    expect(refusal({ PORT: '70000' })).to.match(/port \(from env PORT\): .*<=65535/);
    expect(refusal({ LIMITS_BODY_BYTES: '0' })).to.match(/limits\.bodyBytes \(from env LIMITS_BODY_BYTES\): .*>=1/);
    expect(refusal({ JOURNAL_FSYNC: 'maybe' })).to.match(
      /journal\.fsync \(from env JOURNAL_FSYNC\): .*expected boolean/,
    );
    expect(refusal({ DECISION_POLICY: 'never' })).to.match(
      /decisionPolicy \(from env DECISION_POLICY\): .*"auto"\|"all"\|"manual"/,
    );
    expect(refusal({ BASE_URL: 'ftp://example.com' })).to.match(/baseUrl \(from env BASE_URL\)/);
    expect(refusal({ TRUSTED_ISSUERS: '{not json' })).to.match(
      /trustedIssuers \(from env TRUSTED_ISSUERS\): .*expected array/,
    );
  });

  it('wrong types in the file name the file', async () => {
    const path = await file('types.json', { limits: { triples: '10' }, logLevel: 'loud' });
    const message = refusal({ CONFIG_FILE: path });
    expect(message).to.match(new RegExp(`limits\\.triples \\(from file ${path}\\): .*expected number`));
    expect(message).to.match(new RegExp(`logLevel \\(from file ${path}\\): `));
  });

  it('an unreadable or non-object file is refused with its name', async () => {
    expect(refusal({ CONFIG_FILE: join(dir, 'missing.json') })).to.include('missing.json (CONFIG_FILE) cannot be read');
    expect(refusal({ CONFIG_FILE: await file('list.json', '[1]') })).to.include('must hold a JSON object');
  });

  it('npm start refuses a bad configuration: exit code 2, the message on stderr, nothing listening', async () => {
    const path = await file('start.json', { limits: { bodyBytes: -5 } });
    const failed = await run(process.execPath, [MAIN], {
      env: { PATH: process.env.PATH, CONFIG_FILE: path, DATA_DIR: join(dir, 'data'), PORT: '0' },
    }).then(
      () => undefined,
      (err: { code: number; stderr: string }) => err,
    );
    expect(failed, 'the server started').to.not.equal(undefined);
    expect(failed!.code).to.equal(2);
    expect(failed!.stderr).to.include(`limits.bodyBytes (from file ${path})`);
    expect(failed!.stderr).to.not.match(/\n\s+at /);
  });
});
