import { expect } from 'chai';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { expectApiError } from './support/api-error.js';
import { piece } from './support/changes.js';
import { newSigningKey, nowSeconds, sign } from './support/jwt.js';
import { startExternalProvider, type ExternalProvider } from './support/oidc-provider.js';
import { startTestServer, type TestServer } from './support/server.js';

const FORWARDER = 'https://forwarder.example.com/logistics-objects/forwarder';

/** Claims the provider would issue, for a token signed with a key it never published. */
const strangerClaims = (provider: ExternalProvider) => ({
  iss: provider.issuer,
  aud: provider.audience,
  logistics_agent_uri: FORWARDER,
  exp: nowSeconds() + 300,
  jti: String(Math.random()),
});

describe('an external OpenID provider (oidc-provider) as a trusted issuer', function () {
  this.timeout(30_000);
  let provider: ExternalProvider;
  let server: TestServer;

  before(async () => {
    provider = await startExternalProvider(FORWARDER);
    server = await startTestServer({
      trustedIssuers: [{ issuer: provider.issuer, jwksUrl: provider.jwksUrl, audience: provider.audience }],
      internalAgents: [FORWARDER],
    });
  });
  after(async () => {
    await server.close();
    await provider.close();
  });

  const withToken = (token: string, path = '/', init: RequestInit = {}) =>
    server.request(path, {
      ...init,
      agent: 'none',
      headers: { ...(init.headers as Record<string, string>), Authorization: `Bearer ${token}` },
    });

  it('a client-credentials access token (typ at+jwt, RFC 9068) is accepted; the caller is its logistics_agent_uri', async () => {
    const token = await provider.token();
    expect(decodeProtectedHeader(token).typ).to.equal('at+jwt');
    expect(decodeJwt(token)).to.include({
      iss: provider.issuer,
      logistics_agent_uri: FORWARDER,
      aud: provider.audience,
    });
    const res = await withToken(token, '/logistics-objects', {
      method: 'POST',
      headers: { 'Content-Type': 'application/ld+json' },
      body: JSON.stringify(piece()),
    });
    expect(res.status, await res.clone().text()).to.equal(201);
    const created = await withToken(token, res.headers.get('location')!);
    expect(created.status).to.equal(200);
  });

  it('the key set is fetched once and cached across tokens', async () => {
    const before = provider.jwksFetches;
    for (let i = 0; i < 3; i++) expect((await withToken(await provider.token())).status).to.equal(200);
    expect(provider.jwksFetches - before).to.equal(0);
    expect(provider.jwksFetches).to.equal(1);
  });

  it('an unknown kid within a minute of the last fetch is 401 without a refetch', async () => {
    const stranger = await newSigningKey('RS256', 'rotated-key');
    const before = provider.jwksFetches;
    await expectApiError(await withToken(await sign(stranger, strangerClaims(provider), { typ: 'at+jwt' })), 401);
    expect(provider.jwksFetches - before).to.equal(0);
  });

  it('an unknown kid refetches the key set at most once per refetch period (outbound.keySetRefetchSeconds)', async () => {
    const quick = await startTestServer({
      trustedIssuers: [{ issuer: provider.issuer, jwksUrl: provider.jwksUrl }],
      outbound: { keySetRefetchSeconds: 1 },
    });
    try {
      const stranger = await newSigningKey('RS256', 'rotated-key');
      const call = async () =>
        quick.request('/', {
          agent: 'none',
          headers: { Authorization: `Bearer ${await sign(stranger, strangerClaims(provider), { typ: 'at+jwt' })}` },
        });
      const before = provider.jwksFetches;
      expect(
        (await quick.request('/', { agent: 'none', headers: { Authorization: `Bearer ${await provider.token()}` } }))
          .status,
      ).to.equal(200);
      expect(provider.jwksFetches - before).to.equal(1);
      await new Promise((resolve) => setTimeout(resolve, 1100));
      await expectApiError(await call(), 401);
      expect(provider.jwksFetches - before, 'an unknown kid after the period refetches').to.equal(2);
      for (let i = 0; i < 3; i++) await expectApiError(await call(), 401);
      expect(provider.jwksFetches - before, 'no refetch within the period').to.equal(2);
    } finally {
      await quick.close();
    }
  });

  it('a provider that cannot be reached answers 503, not 401', async () => {
    const down = await startExternalProvider(FORWARDER);
    const token = await down.token();
    await down.close();
    const other = await startTestServer({
      trustedIssuers: [{ issuer: down.issuer, jwksUrl: down.jwksUrl }],
      outbound: { timeoutMs: 2000 },
    });
    try {
      await expectApiError(
        await other.request('/', { agent: 'none', headers: { Authorization: `Bearer ${token}` } }),
        503,
        /could not be fetched/,
      );
    } finally {
      await other.close();
    }
  });
});
