import { X509Certificate, createHash, createPublicKey } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'chai';
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, importX509, jwtVerify, type JWK } from 'jose';
import { OTHER_AGENT, startTestServer, type TestServer } from './support/server.js';

const LIFETIME = 600;
/** A configured client whose id and secret need form-encoding in a Basic header (RFC 6749 2.3.1). */
const ODD_CLIENT = {
  id: 'odd client',
  secret: 'p@ss:w+rd %/é',
  agent: 'https://odd.example/logistics-objects/odd-org',
};

const basic = (id: string, secret: string, encode = true) => {
  const e = (s: string) => (encode ? encodeURIComponent(s).replace(/%20/g, '+') : s);
  return `Basic ${Buffer.from(`${e(id)}:${e(secret)}`).toString('base64')}`;
};

interface TokenAnswer {
  status: number;
  body: Record<string, unknown>;
  headers: Headers;
}

describe('Embedded identity provider', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({
      identityProvider: {
        tokenLifetimeSeconds: LIFETIME,
        clients: [{ id: 'partner', secret: 'partner-secret', agent: OTHER_AGENT }, ODD_CLIENT],
      },
    });
  });
  after(() => server.close());

  const tokenRequest = async (
    form: Record<string, string>,
    headers: Record<string, string> = {},
  ): Promise<TokenAnswer> => {
    const res = await fetch(`${server.url}/idp/token`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams(form),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown>, headers: res.headers };
  };
  const dev = () => server.running.services.identityProvider!.devClient;
  const jwks = async () => (await (await fetch(`${server.url}/idp/.well-known/jwks.json`)).json()) as { keys: JWK[] };

  const expectToken = async (answer: TokenAnswer, agent: string) => {
    expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
    expect(Object.keys(answer.body).sort()).to.deep.equal(['access_token', 'expires_in', 'token_type']);
    expect(answer.body.token_type).to.equal('Bearer');
    expect(answer.body.expires_in).to.equal(LIFETIME);
    expect(answer.headers.get('cache-control')).to.equal('no-store');
    expect(answer.headers.get('content-language')).to.equal('en-US');
    const token = answer.body.access_token as string;
    expect(decodeJwt(token).logistics_agent_uri).to.equal(agent);
    const res = await fetch(`${server.url}/`, { headers: { Authorization: `Bearer ${token}` } });
    expect(res.status).to.equal(200);
  };
  const expectTokenError = (answer: TokenAnswer, status: number, error: string) => {
    expect(answer.status, JSON.stringify(answer.body)).to.equal(status);
    expect(Object.keys(answer.body).sort()).to.deep.equal(['error', 'error_description']);
    expect(answer.body.error).to.equal(error);
    expect(answer.body.error_description).to.be.a('string').and.not.equal('');
    expect(answer.headers.get('content-language')).to.equal('en-US');
  };

  describe('token endpoint (client credentials grant)', () => {
    it('authenticates the client with a Basic header', async () => {
      await expectToken(
        await tokenRequest({ grant_type: 'client_credentials' }, { Authorization: basic(dev().id, dev().secret) }),
        server.running.services.holder,
      );
    });

    it('authenticates the client with client_id and client_secret form fields', async () => {
      await expectToken(
        await tokenRequest({ grant_type: 'client_credentials', client_id: 'partner', client_secret: 'partner-secret' }),
        OTHER_AGENT,
      );
    });

    it('decodes Basic credentials as form-encoded values, as RFC 6749 requires', async () => {
      await expectToken(
        await tokenRequest(
          { grant_type: 'client_credentials' },
          { Authorization: basic(ODD_CLIENT.id, ODD_CLIENT.secret) },
        ),
        ODD_CLIENT.agent,
      );
      await expectToken(
        await tokenRequest({
          grant_type: 'client_credentials',
          client_id: ODD_CLIENT.id,
          client_secret: ODD_CLIENT.secret,
        }),
        ODD_CLIENT.agent,
      );
    });

    it('a client_id field that repeats the Basic client is allowed', async () => {
      await expectToken(
        await tokenRequest(
          { grant_type: 'client_credentials', client_id: 'partner' },
          { Authorization: basic('partner', 'partner-secret') },
        ),
        OTHER_AGENT,
      );
    });

    it('wrong secret or unknown client: 401 invalid_client (with WWW-Authenticate for Basic)', async () => {
      const viaBasic = await tokenRequest(
        { grant_type: 'client_credentials' },
        { Authorization: basic('partner', 'wrong') },
      );
      expectTokenError(viaBasic, 401, 'invalid_client');
      expect(viaBasic.headers.get('www-authenticate')).to.match(/^Basic/);
      expectTokenError(
        await tokenRequest({ grant_type: 'client_credentials', client_id: 'partner', client_secret: 'wrong' }),
        401,
        'invalid_client',
      );
      expectTokenError(
        await tokenRequest({ grant_type: 'client_credentials', client_id: 'nobody', client_secret: 'partner-secret' }),
        401,
        'invalid_client',
      );
      expectTokenError(
        await tokenRequest({ grant_type: 'client_credentials', client_id: 'partner', client_secret: '' }),
        401,
        'invalid_client',
      );
    });

    it('missing client authentication: 401 invalid_client', async () => {
      expectTokenError(await tokenRequest({ grant_type: 'client_credentials' }), 401, 'invalid_client');
      expectTokenError(
        await tokenRequest({ grant_type: 'client_credentials', client_id: 'partner' }),
        401,
        'invalid_client',
      );
      expectTokenError(
        await tokenRequest({ grant_type: 'client_credentials', client_secret: 'partner-secret' }),
        401,
        'invalid_client',
      );
    });

    it('a Basic header that cannot be decoded is 401 invalid_client, never a server error', async () => {
      for (const authorization of [
        'Basic !!!not-base64!!!',
        basic('partner%', 'x', false),
        `Basic ${Buffer.from('no-colon').toString('base64')}`,
        'Basic ',
      ]) {
        expectTokenError(
          await tokenRequest({ grant_type: 'client_credentials' }, { Authorization: authorization }),
          401,
          'invalid_client',
        );
      }
    });

    it('grant_type other than client_credentials: 400 unsupported_grant_type', async () => {
      for (const grant of ['password', 'authorization_code', 'refresh_token', 'CLIENT_CREDENTIALS']) {
        expectTokenError(
          await tokenRequest({ grant_type: grant, client_id: 'partner', client_secret: 'partner-secret' }),
          400,
          'unsupported_grant_type',
        );
      }
    });

    it('missing grant_type, or a body that is not a form: 400 invalid_request', async () => {
      expectTokenError(
        await tokenRequest({ client_id: 'partner', client_secret: 'partner-secret' }),
        400,
        'invalid_request',
      );
      const json = await fetch(`${server.url}/idp/token`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({
          grant_type: 'client_credentials',
          client_id: 'partner',
          client_secret: 'partner-secret',
        }),
      });
      expectTokenError(
        { status: json.status, body: (await json.json()) as Record<string, unknown>, headers: json.headers },
        400,
        'invalid_request',
      );
    });

    it('two client authentication methods at once: 400 invalid_request', async () => {
      const both = await tokenRequest(
        { grant_type: 'client_credentials', client_id: 'partner', client_secret: 'partner-secret' },
        { Authorization: basic('partner', 'partner-secret') },
      );
      expectTokenError(both, 400, 'invalid_request');
      const otherId = await tokenRequest(
        { grant_type: 'client_credentials', client_id: ODD_CLIENT.id },
        { Authorization: basic('partner', 'partner-secret') },
      );
      expectTokenError(otherId, 400, 'invalid_request');
    });

    it('issues RS256 JWTs with typ, kid, iss, exp, logistics_agent_uri, verifiable with the published JWKS', async () => {
      const answer = await tokenRequest({
        grant_type: 'client_credentials',
        client_id: 'partner',
        client_secret: 'partner-secret',
      });
      const token = answer.body.access_token as string;
      const header = decodeProtectedHeader(token);
      const published = await jwks();
      expect(header).to.deep.equal({ alg: 'RS256', typ: 'JWT', kid: published.keys[0].kid });
      const { payload } = await jwtVerify(token, createLocalJWKSet(published), {
        issuer: `${server.url}/idp`,
        typ: 'JWT',
      });
      expect(payload.logistics_agent_uri).to.equal(OTHER_AGENT);
      expect(payload.sub).to.equal('partner');
      expect(payload.exp! - payload.iat!).to.equal(LIFETIME);
      expect(Math.abs(payload.iat! - Date.now() / 1000)).to.be.below(5);
    });

    it('other methods are 405 with Allow, without needing a token', async () => {
      for (const [path, method, allow] of [
        ['/idp/token', 'GET', 'POST'],
        ['/idp/.well-known/jwks.json', 'DELETE', 'GET, HEAD'],
      ]) {
        const res = await fetch(`${server.url}${path}`, { method });
        expect(res.status, `${method} ${path}`).to.equal(405);
        expect(res.headers.get('allow')).to.equal(allow);
        expect(((await res.json()) as Record<string, unknown>)['@type']).to.equal('api:Error');
      }
    });
  });

  describe('JWKS', () => {
    it('is public and cacheable, with one key holding alg, kty, use, x5c, n, e, kid, x5t and nothing private', async () => {
      const res = await fetch(`${server.url}/idp/.well-known/jwks.json`);
      expect(res.status).to.equal(200);
      expect(res.headers.get('cache-control')).to.match(/max-age=\d+/);
      expect(res.headers.get('content-language')).to.equal('en-US');
      const { keys } = (await res.json()) as { keys: JWK[] };
      expect(keys).to.have.length(1);
      const [key] = keys;
      expect(key).to.include({ alg: 'RS256', kty: 'RSA', use: 'sig', e: 'AQAB' });
      expect(key).to.have.all.keys('alg', 'kty', 'use', 'x5c', 'n', 'e', 'kid', 'x5t');
      expect(key.kid).to.be.a('string').and.not.equal('');
      expect(Buffer.from(key.n!, 'base64url').length).to.equal(256);
      expect(key.x5c).to.be.an('array').with.length(1);
    });

    it('x5c is a self-signed certificate of the same key, and x5t its SHA-1 thumbprint', async () => {
      const [key] = (await jwks()).keys;
      const der = Buffer.from(key.x5c![0], 'base64');
      const certificate = new X509Certificate(der);
      expect(certificate.publicKey.export({ format: 'jwk' })).to.deep.equal({ kty: 'RSA', n: key.n, e: key.e });
      expect(certificate.verify(certificate.publicKey)).to.equal(true);
      expect(certificate.subject).to.equal(certificate.issuer);
      expect(new Date(certificate.validTo).getTime()).to.be.greaterThan(Date.now() + 365 * 24 * 3600 * 1000);
      expect(key.x5t).to.equal(createHash('sha1').update(der).digest('base64url'));
      // A consumer that only trusts the certificate verifies our tokens too.
      const pem = `-----BEGIN CERTIFICATE-----\n${key.x5c![0]}\n-----END CERTIFICATE-----`;
      await jwtVerify(await server.token('other'), await importX509(pem, 'RS256'));
      expect(createPublicKey({ key, format: 'jwk' }).equals(certificate.publicKey)).to.equal(true);
    });

    it('key, certificate and dev client survive a restart; tokens issued before stay valid', async () => {
      const before = await jwks();
      const token = await server.token('other');
      await server.stop();
      await server.restart();
      expect(await jwks()).to.deep.equal(before);
      expect((await fetch(`${server.url}/`, { headers: { Authorization: `Bearer ${token}` } })).status).to.equal(200);
    });

    it('a data directory from before certificates gets one at start, for the same key', async () => {
      const before = (await jwks()).keys[0];
      await server.stop();
      const path = join(server.dataDir, 'identity-provider.json');
      const state = JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>;
      delete state.certificate;
      await writeFile(path, JSON.stringify(state));
      await server.restart();
      const after = (await jwks()).keys[0];
      expect(after).to.include({ kid: before.kid, n: before.n, e: before.e });
      expect(after.x5c).to.have.length(1);
      expect(JSON.parse(await readFile(path, 'utf8'))).to.have.property('certificate', after.x5c![0]);
    });
  });
});
