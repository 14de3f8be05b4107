import { randomBytes, timingSafeEqual } from 'node:crypto';
import { readFile, writeFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { SignJWT, exportJWK, generateKeyPair, importJWK, type JWK, type CryptoKey } from 'jose';
import type { ClientConfig } from '../config.js';

const STATE_FILE = 'identity-provider.json';
export const SIGNING_ALGORITHM = 'RS256';

interface IdentityProviderState {
  kid: string;
  privateJwk: JWK;
  devClient: { id: string; secret: string };
}

/** The answer of the token endpoint, or its error (RFC 6749 section 5). */
export type TokenResult =
  | { ok: true; body: { access_token: string; expires_in: number; token_type: 'Bearer' } }
  | { ok: false; status: 400 | 401; body: { error: string; error_description: string } };

export interface TokenRequest {
  grantType?: string;
  clientId?: string;
  clientSecret?: string;
}

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * The embedded identity provider: one RSA key kept in the data directory, a dev client for
 * the data holder, and the client-credentials grant.
 */
export class IdentityProvider {
  private constructor(
    readonly issuer: string,
    private readonly state: IdentityProviderState,
    private readonly privateKey: CryptoKey,
    readonly publicJwk: JWK,
    private readonly clients: ClientConfig[],
    private readonly lifetimeSeconds: number,
  ) {}

  /** Loads the key and dev client from `dataDir`, creating them on first use. */
  static async open(opts: { dataDir: string; issuer: string; holder: string; clients: ClientConfig[]; lifetimeSeconds: number }): Promise<IdentityProvider> {
    const path = join(opts.dataDir, STATE_FILE);
    let state: IdentityProviderState;
    try {
      state = JSON.parse(await readFile(path, 'utf8')) as IdentityProviderState;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      const { privateKey } = await generateKeyPair(SIGNING_ALGORITHM, { extractable: true, modulusLength: 2048 });
      state = {
        kid: randomBytes(8).toString('hex'),
        privateJwk: await exportJWK(privateKey),
        devClient: { id: 'dev-client', secret: randomBytes(18).toString('base64url') },
      };
      await writeFile(`${path}.tmp`, JSON.stringify(state, null, 2), { mode: 0o600 });
      await rename(`${path}.tmp`, path);
    }
    const privateKey = (await importJWK(state.privateJwk, SIGNING_ALGORITHM)) as CryptoKey;
    const { n, e, kty } = state.privateJwk;
    const publicJwk: JWK = { kty, n, e, kid: state.kid, alg: SIGNING_ALGORITHM, use: 'sig' };
    const clients = [{ ...state.devClient, agent: opts.holder }, ...opts.clients];
    return new IdentityProvider(opts.issuer, state, privateKey, publicJwk, clients, opts.lifetimeSeconds);
  }

  get devClient(): { id: string; secret: string } {
    return this.state.devClient;
  }

  get tokenEndpoint(): string {
    return `${this.issuer}/token`;
  }

  get jwksUrl(): string {
    return `${this.issuer}/.well-known/jwks.json`;
  }

  jwks(): { keys: JWK[] } {
    return { keys: [this.publicJwk] };
  }

  /** Signs a token for `agent`; used by the token endpoint and the `onerecord token` command. */
  issue(agent: string, lifetimeSeconds = this.lifetimeSeconds, subject = agent): Promise<string> {
    return new SignJWT({ logistics_agent_uri: agent })
      .setProtectedHeader({ alg: SIGNING_ALGORITHM, typ: 'JWT', kid: this.state.kid })
      .setIssuer(this.issuer)
      .setSubject(subject)
      .setIssuedAt()
      .setExpirationTime(Math.floor(Date.now() / 1000) + lifetimeSeconds)
      .sign(this.privateKey);
  }

  async token(request: TokenRequest): Promise<TokenResult> {
    if (request.grantType !== 'client_credentials') {
      return { ok: false, status: 400, body: { error: 'unsupported_grant_type', error_description: 'grant_type must be client_credentials' } };
    }
    if (!request.clientId || !request.clientSecret) {
      return { ok: false, status: 401, body: { error: 'invalid_client', error_description: 'client authentication is required (Basic header or client_id and client_secret)' } };
    }
    const client = this.clients.find((c) => c.id === request.clientId);
    if (!client || !sameSecret(client.secret, request.clientSecret)) {
      return { ok: false, status: 401, body: { error: 'invalid_client', error_description: 'unknown client or wrong secret' } };
    }
    const token = await this.issue(client.agent, this.lifetimeSeconds, client.id);
    return { ok: true, body: { access_token: token, expires_in: this.lifetimeSeconds, token_type: 'Bearer' } };
  }
}
