import { createPublicKey } from 'node:crypto';
import { expect } from 'chai';
import type { JWTPayload } from 'jose';
import { expectApiError } from './support/api-error.js';
import {
  embeddedKey,
  hmacWithPublicKey,
  newSigningKey,
  nowSeconds,
  sign,
  startJwksServer,
  unsignedToken,
  type SigningKey,
} from './support/jwt.js';
import type { LoopbackListener } from './support/loopback.js';
import { OTHER_AGENT, freePort, postJsonLd, startTestServer, type TestServer } from './support/server.js';

const PARTNER_ISSUER = 'https://idp.partner.example';
const AUDIENCE_ISSUER = 'https://idp.audience.example';
const DOWN_ISSUER = 'https://idp.down.example';
const AUDIENCE = 'https://onerecord.test/api';

const PIECE = {
  '@context': { cargo: 'https://onerecord.iata.org/ns/cargo#' },
  '@type': 'cargo:Piece',
  'cargo:goodsDescription': 'auth test',
};

/** Every route of the service (and one that does not exist): none answers without a token. */
const ROUTES: [string, string][] = [
  ['GET', '/'],
  ['POST', '/logistics-objects'],
  ['GET', '/logistics-objects/some-id'],
  ['PATCH', '/logistics-objects/some-id'],
  ['GET', '/logistics-objects/some-id/audit-trail'],
  ['GET', '/logistics-objects/some-id/logistics-events'],
  ['POST', '/logistics-objects/some-id/logistics-events'],
  ['GET', '/logistics-objects/some-id/logistics-events/event-id'],
  ['POST', '/logistics-events'],
  ['GET', '/subscriptions?topicType=x&topic=y'],
  ['POST', '/subscriptions'],
  ['POST', '/access-delegations'],
  ['GET', '/action-requests'],
  ['GET', '/action-requests/some-id'],
  ['PATCH', '/action-requests/some-id?status=REQUEST_ACCEPTED'],
  ['DELETE', '/action-requests/some-id'],
  ['POST', '/notifications'],
  ['GET', '/no-such-resource'],
];

describe('Authentication and token verification', () => {
  let server: TestServer;
  let jwks: LoopbackListener;
  let embedded: SigningKey & { issuer: string };
  let partnerEs: SigningKey;
  let partnerPs: SigningKey;
  let partnerRs384: SigningKey;

  before(async () => {
    partnerEs = await newSigningKey('ES256', 'partner-es');
    partnerPs = await newSigningKey('PS256', 'partner-ps');
    partnerRs384 = await newSigningKey('RS384', 'partner-rs384');
    jwks = await startJwksServer([partnerEs, partnerPs, partnerRs384]);
    const closedPort = await freePort();
    server = await startTestServer({
      trustedIssuers: [
        { issuer: PARTNER_ISSUER, jwksUrl: `${jwks.url}/partner/jwks.json` },
        { issuer: AUDIENCE_ISSUER, jwksUrl: `${jwks.url}/audience/jwks.json`, audience: AUDIENCE },
        { issuer: DOWN_ISSUER, jwksUrl: `http://127.0.0.1:${closedPort}/jwks.json` },
      ],
    });
    embedded = await embeddedKey(server.dataDir);
  });
  after(async () => {
    await server.close();
    await jwks.close();
  });

  const claims = (extra: JWTPayload = {}): JWTPayload => ({
    iss: embedded.issuer,
    exp: nowSeconds() + 300,
    logistics_agent_uri: OTHER_AGENT,
    ...extra,
  });
  const withToken = (token: string, path = '/', init: RequestInit = {}) =>
    server.request(path, {
      ...init,
      agent: 'none',
      headers: { ...(init.headers as Record<string, string>), Authorization: `Bearer ${token}` },
    });
  const expectRefused = async (token: string) => {
    await expectApiError(await withToken(token), 401);
  };

  describe('every route needs a token', () => {
    for (const [method, path] of ROUTES) {
      it(`${method} ${path} without a token: 401 api:Error with WWW-Authenticate: Bearer`, async () => {
        const res = await server.request(path, {
          method,
          agent: 'none',
          headers: { 'Content-Type': 'application/ld+json' },
          body: method === 'GET' || method === 'DELETE' ? undefined : '{}',
        });
        expect(res.headers.get('www-authenticate')).to.equal('Bearer');
        await expectApiError(res, 401, /Authorization: Bearer/);
      });
    }

    it('the same routes answer a valid token with something other than 401', async () => {
      for (const [method, path] of ROUTES.filter(([, p]) => !p.startsWith('/idp'))) {
        const res = await server.request(path, {
          method,
          headers: { 'Content-Type': 'application/ld+json' },
          body: method === 'GET' || method === 'DELETE' ? undefined : '{}',
        });
        expect(res.status, `${method} ${path}`).to.not.equal(401);
      }
    });

    it('other schemes and malformed bearer values are 401', async () => {
      for (const authorization of [
        'Basic ZGV2LWNsaWVudDpzZWNyZXQ=',
        'Bearer',
        'Bearer not-a-jwt',
        'Bearer a.b.c',
        `Token ${await server.token()}`,
      ]) {
        await expectApiError(
          await server.request('/', { agent: 'none', headers: { Authorization: authorization } }),
          401,
        );
      }
    });

    it('the identity provider endpoints are public', async () => {
      expect((await fetch(`${server.url}/idp/.well-known/jwks.json`)).status).to.equal(200);
    });
  });

  describe('tokens of the embedded identity provider', () => {
    it("are accepted, and the caller is the token's logistics_agent_uri", async () => {
      expect((await server.request('/')).status).to.equal(200);
      expect((await postJsonLd(server, '/logistics-objects', PIECE)).status).to.equal(201);
    });

    it('a valid token whose caller may not act gets 403, not 401', async () => {
      await expectApiError(await postJsonLd(server, '/logistics-objects', PIECE, 'other'), 403);
      const created = await postJsonLd(server, '/logistics-objects', PIECE);
      await expectApiError(await server.request(created.headers.get('location')!, { agent: 'other' }), 403);
    });

    it('a token we sign ourselves with the same key and claims is accepted (the refusals below are not about the signer)', async () => {
      expect((await withToken(await sign(embedded, claims()))).status).to.equal(200);
    });

    it('alg none is refused', () => expectRefused(unsignedToken(claims())));

    it('HS256 signed with the public key as secret is refused', async () => {
      const pem = createPublicKey({ key: embedded.publicJwk, format: 'jwk' })
        .export({ type: 'spki', format: 'pem' })
        .toString();
      await expectRefused(hmacWithPublicKey(pem, embedded.kid, claims()));
    });

    it('an expired token is refused; expiry within the 30 s clock tolerance is not', async () => {
      await expectRefused(await sign(embedded, claims({ exp: nowSeconds() - 45 })));
      expect((await withToken(await sign(embedded, claims({ exp: nowSeconds() - 10 })))).status).to.equal(200);
      await expectApiError(
        await withToken(await server.running.services.identityProvider!.issue(OTHER_AGENT, -60)),
        401,
        /expired/,
      );
    });

    it('a token not yet valid (nbf beyond the tolerance) is refused', async () => {
      await expectRefused(await sign(embedded, claims({ nbf: nowSeconds() + 120 })));
    });

    it('an issuer that is not trusted, or no issuer, is refused even with a valid signature', async () => {
      await expectApiError(
        await withToken(await sign(embedded, claims({ iss: 'https://evil.example' }))),
        401,
        /trusted/,
      );
      await expectRefused(await sign(embedded, claims({ iss: undefined })));
    });

    it('missing logistics_agent_uri or exp, or an agent that is not an IRI, is refused', async () => {
      await expectRefused(await sign(embedded, claims({ logistics_agent_uri: undefined })));
      await expectRefused(await sign(embedded, claims({ exp: undefined })));
      await expectRefused(await sign(embedded, claims({ logistics_agent_uri: 'not an iri' })));
      await expectRefused(await sign(embedded, claims({ logistics_agent_uri: 42 })));
    });

    it('a wrong signature is refused: payload swapped, or signed by another key with the same kid', async () => {
      const [header, , signature] = (await sign(embedded, claims())).split('.');
      const forged = Buffer.from(
        JSON.stringify(claims({ logistics_agent_uri: 'https://evil.example/agent' })),
      ).toString('base64url');
      await expectRefused(`${header}.${forged}.${signature}`);
      const impostor = await newSigningKey('RS256', embedded.kid);
      await expectRefused(await sign(impostor, claims()));
    });

    it('a missing or wrong typ is refused; JWT and at+jwt (RFC 9068) are accepted', async () => {
      await expectRefused(await sign(embedded, claims(), { typ: undefined }));
      await expectRefused(await sign(embedded, claims(), { typ: 'dpop+jwt' }));
      await expectRefused(await sign(embedded, claims(), { typ: 'secevent+jwt' }));
      for (const typ of ['at+jwt', 'application/at+jwt', 'AT+JWT'])
        expect((await withToken(await sign(embedded, claims(), { typ }))).status, typ).to.equal(200);
    });

    it('an unknown kid is refused', () => sign(embedded, claims(), { kid: 'no-such-key' }).then(expectRefused));

    it('keys named by the token (jku, x5u, jwk) are never used or fetched', async () => {
      const attacker = await newSigningKey('RS256', 'attacker');
      const attackerJwks = await startJwksServer([attacker]);
      try {
        await expectRefused(await sign(attacker, claims(), { jku: `${attackerJwks.url}/jwks.json` }));
        await expectRefused(await sign(attacker, claims(), { x5u: `${attackerJwks.url}/cert.pem` }));
        await expectRefused(await sign(attacker, claims(), { jwk: attacker.publicJwk }));
        await expectRefused(
          await sign(attacker, claims({ iss: PARTNER_ISSUER }), { jku: `${attackerJwks.url}/jwks.json` }),
        );
        expect(attackerJwks.requests).to.equal(0);
      } finally {
        await attackerJwks.close();
      }
    });
  });

  describe('other identity providers, trusted through config.trustedIssuers', () => {
    const partnerClaims = (extra: JWTPayload = {}): JWTPayload => claims({ iss: PARTNER_ISSUER, ...extra });

    it('ES256 and PS256 tokens verify against the JWKS fetched from the configured URL', async () => {
      expect((await withToken(await sign(partnerEs, partnerClaims()))).status).to.equal(200);
      expect((await withToken(await sign(partnerPs, partnerClaims()))).status).to.equal(200);
      expect(jwks.requests).to.be.greaterThan(0);
    });

    it('the caller is the agent of the token: a partner token for the data holder may create objects', async () => {
      const partner = await sign(partnerEs, partnerClaims());
      await expectApiError(
        await withToken(partner, '/logistics-objects', {
          method: 'POST',
          headers: { 'Content-Type': 'application/ld+json' },
          body: JSON.stringify(PIECE),
        }),
        403,
      );
      const forHolder = await sign(partnerEs, partnerClaims({ logistics_agent_uri: server.running.services.holder }));
      const res = await withToken(forHolder, '/logistics-objects', {
        method: 'POST',
        headers: { 'Content-Type': 'application/ld+json' },
        body: JSON.stringify(PIECE),
      });
      expect(res.status).to.equal(201);
    });

    it('algorithms other than RS256, PS256 and ES256 are refused even from a trusted issuer', () =>
      sign(partnerRs384, partnerClaims()).then(expectRefused));

    it("a trusted issuer's key does not sign for another issuer", () => sign(partnerEs, claims()).then(expectRefused));

    it('aud is checked when configured: missing or wrong is 401', async () => {
      const audienceClaims = (aud?: string | string[]) => claims({ iss: AUDIENCE_ISSUER, aud });
      expect((await withToken(await sign(partnerEs, audienceClaims(AUDIENCE)))).status).to.equal(200);
      expect(
        (await withToken(await sign(partnerEs, audienceClaims(['https://other.example', AUDIENCE])))).status,
      ).to.equal(200);
      await expectRefused(await sign(partnerEs, audienceClaims()));
      await expectRefused(await sign(partnerEs, audienceClaims('https://other.example')));
    });

    it('an issuer whose JWKS cannot be fetched gives 503, not a verdict on the token', async () => {
      const key = await newSigningKey('ES256', 'down');
      await expectApiError(await withToken(await sign(key, claims({ iss: DOWN_ISSUER }))), 503, /could not be fetched/);
    });
  });
});
