import { createServer, type Server } from 'node:http';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import Provider from 'oidc-provider';
import { noteSecret } from './log-sink.js';

/**
 * A certified OpenID provider (panva's oidc-provider) on loopback, as a second issuer beside the
 * embedded one: one client-credentials client whose JWT access tokens (`typ: at+jwt`, RFC 9068)
 * carry `logistics_agent_uri`, keys published at `/jwks`. Counts the key set fetches.
 */
export interface ExternalProvider {
  issuer: string;
  jwksUrl: string;
  audience: string;
  agent: string;
  jwksFetches: number;
  /** A fresh access token from the token endpoint (client credentials, HTTP Basic). */
  token(): Promise<string>;
  close(): Promise<void>;
}

const CLIENT_ID = 'forwarder-client';
const CLIENT_SECRET = 'forwarder-client-secret-3f9a1c';
const AUDIENCE = 'https://onerecord.example/api';

export async function startExternalProvider(agent: string): Promise<ExternalProvider> {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const signingKey: JWK = { ...(await exportJWK(privateKey)), kid: 'external-1', alg: 'RS256', use: 'sig' };
  let server: Server | undefined;
  const provider: ExternalProvider = {
    issuer: '',
    jwksUrl: '',
    audience: AUDIENCE,
    agent,
    jwksFetches: 0,
  } as ExternalProvider;
  server = createServer();
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  provider.issuer = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  provider.jwksUrl = `${provider.issuer}/jwks`;
  const oidc = new Provider(provider.issuer, {
    clients: [
      {
        client_id: CLIENT_ID,
        client_secret: CLIENT_SECRET,
        grant_types: ['client_credentials'],
        redirect_uris: [],
        response_types: [],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    jwks: { keys: [signingKey] },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => AUDIENCE,
        useGrantedResource: () => true,
        getResourceServerInfo: () => ({
          scope: 'onerecord',
          audience: AUDIENCE,
          accessTokenFormat: 'jwt',
          accessTokenTTL: 600,
          jwt: { sign: { alg: 'RS256' } },
        }),
      },
    },
    extraTokenClaims: () => ({ logistics_agent_uri: agent }),
    ttl: { ClientCredentials: 600 },
  });
  const callback = oidc.callback();
  server.on('request', (req, res) => {
    if (req.url?.startsWith('/jwks')) provider.jwksFetches += 1;
    callback(req, res);
  });
  noteSecret(CLIENT_SECRET);
  provider.token = async () => {
    const res = await fetch(`${provider.issuer}/token`, {
      method: 'POST',
      headers: {
        Authorization: `Basic ${Buffer.from(`${CLIENT_ID}:${CLIENT_SECRET}`).toString('base64')}`,
        'Content-Type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({ grant_type: 'client_credentials', scope: 'onerecord' }),
    });
    const body = (await res.json()) as { access_token?: string };
    if (res.status !== 200 || !body.access_token)
      throw new Error(`token request failed: ${res.status} ${JSON.stringify(body)}`);
    noteSecret(body.access_token);
    return body.access_token;
  };
  provider.close = async () => {
    server!.closeAllConnections();
    await new Promise<void>((resolve) => server!.close(() => resolve()));
  };
  return provider;
}
