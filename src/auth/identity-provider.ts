import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { copyFile, mkdir, readFile, writeFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { SignJWT, exportJWK, generateKeyPair, importJWK, type JWK, type CryptoKey } from 'jose';
import type { ClientConfig } from '../config.js';

const STATE_FILE = 'identity-provider.json';

/**
 * Gives data directory `to` the embedded identity provider of `from` (its key, issuer and clients),
 * before a server starts on it: server processes behind one load balancer issue and accept the same tokens.
 */
export async function shareIdentityProvider(from: string, to: string): Promise<void> {
  await mkdir(to, { recursive: true });
  await copyFile(join(from, STATE_FILE), join(to, STATE_FILE));
}
export const SIGNING_ALGORITHM = 'RS256';
const CERTIFICATE_YEARS = 10;

interface IdentityProviderState {
  kid: string;
  privateJwk: JWK;
  devClient: { id: string; secret: string };
  /** Self-signed X.509 certificate of the key (base64 DER), published as `x5c`. */
  certificate?: string;
  /** Issuer and holder of the server that last opened this state, so the CLI signs the same tokens. */
  issuer?: string;
  holder?: string;
}

/** The answer of the token endpoint, or its error (RFC 6749 section 5). */
export type TokenResult =
  | { ok: true; body: { access_token: string; expires_in: number; token_type: 'Bearer' } }
  | { ok: false; status: 400 | 401; body: { error: string; error_description: string } };

export interface ClientCredentials {
  id: string;
  secret: string;
}

export interface TokenRequest {
  grantType?: string;
  /** From an `Authorization: Basic` header (client_secret_basic); 'malformed' if it could not be decoded. */
  basic?: ClientCredentials | 'malformed';
  /** The `client_id` and `client_secret` form fields (client_secret_post). */
  form: { clientId?: string; clientSecret?: string };
}

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

const tokenError = (status: 400 | 401, error: string, description: string): TokenResult => ({
  ok: false,
  status,
  body: { error, error_description: description },
});

async function readState(path: string): Promise<IdentityProviderState | undefined> {
  try {
    return JSON.parse(await readFile(path, 'utf8')) as IdentityProviderState;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

async function writeState(path: string, state: IdentityProviderState): Promise<void> {
  await writeFile(`${path}.tmp`, JSON.stringify(state, null, 2), { mode: 0o600 });
  await rename(`${path}.tmp`, path);
}

async function newState(): Promise<IdentityProviderState> {
  const { privateKey } = await generateKeyPair(SIGNING_ALGORITHM, { extractable: true, modulusLength: 2048 });
  return {
    kid: randomBytes(8).toString('hex'),
    privateJwk: await exportJWK(privateKey),
    devClient: { id: 'dev-client', secret: randomBytes(18).toString('base64url') },
  };
}

async function publicKeyOf(privateJwk: JWK): Promise<CryptoKey> {
  const { kty, n, e } = privateJwk;
  return (await importJWK({ kty, n, e }, SIGNING_ALGORITHM)) as CryptoKey;
}

/** A self-signed certificate for the key: JWKS consumers that want `x5c` get one. */
async function selfSignedCertificate(privateKey: CryptoKey, publicKey: CryptoKey, issuer: string): Promise<string> {
  // Loaded only when a certificate is made (first start): @peculiar/x509 resolves its services
  // through tsyringe, which needs the global Reflect metadata polyfill, and both are slow to load.
  await import('reflect-metadata');
  const { X509CertificateGenerator } = await import('@peculiar/x509');
  const notBefore = new Date();
  const notAfter = new Date(notBefore);
  notAfter.setUTCFullYear(notAfter.getUTCFullYear() + CERTIFICATE_YEARS);
  const certificate = await X509CertificateGenerator.createSelfSigned({
    name: [{ CN: [issuer] }],
    notBefore,
    notAfter,
    signingAlgorithm: { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' } as Algorithm,
    keys: { privateKey, publicKey },
  });
  return Buffer.from(certificate.rawData).toString('base64');
}

function publicJwkOf(state: IdentityProviderState & { certificate: string }): JWK {
  const { n, e, kty } = state.privateJwk;
  const x5t = createHash('sha1').update(Buffer.from(state.certificate, 'base64')).digest('base64url');
  return { kty, n, e, kid: state.kid, alg: SIGNING_ALGORITHM, use: 'sig', x5c: [state.certificate], x5t };
}

/**
 * The embedded identity provider: one RSA key (with a self-signed certificate) kept in the
 * data directory, a dev client for the data holder, and the client-credentials grant.
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

  /**
   * Loads the key, certificate and dev client from `dataDir`, creating what is missing, and
   * records `issuer` and `holder` there for `openRecorded`.
   */
  static async open(opts: {
    dataDir: string;
    issuer: string;
    holder: string;
    clients: ClientConfig[];
    lifetimeSeconds: number;
  }): Promise<IdentityProvider> {
    const path = join(opts.dataDir, STATE_FILE);
    const stored = await readState(path);
    const state = stored ?? (await newState());
    const privateKey = (await importJWK(state.privateJwk, SIGNING_ALGORITHM)) as CryptoKey;
    const certificate =
      state.certificate ?? (await selfSignedCertificate(privateKey, await publicKeyOf(state.privateJwk), opts.issuer));
    const current = { ...state, certificate, issuer: opts.issuer, holder: opts.holder };
    if (!stored || stored.certificate !== certificate || stored.issuer !== opts.issuer || stored.holder !== opts.holder)
      await writeState(path, current);
    const clients = [{ ...state.devClient, agent: opts.holder }, ...opts.clients];
    return new IdentityProvider(opts.issuer, current, privateKey, publicJwkOf(current), clients, opts.lifetimeSeconds);
  }

  /**
   * Opens the state a server left in `dataDir`, with the issuer and holder it recorded (the
   * `onerecord token` command: its tokens must match what that server verifies).
   */
  static async openRecorded(
    dataDir: string,
    lifetimeSeconds: number,
  ): Promise<{ idp: IdentityProvider; holder: string }> {
    const state = await readState(join(dataDir, STATE_FILE));
    if (!state?.issuer || !state.holder || !state.certificate) {
      throw new Error(`no identity provider state in ${dataDir}: start the server once with this data directory first`);
    }
    const privateKey = (await importJWK(state.privateJwk, SIGNING_ALGORITHM)) as CryptoKey;
    const recorded = { ...state, certificate: state.certificate };
    return {
      idp: new IdentityProvider(state.issuer, recorded, privateKey, publicJwkOf(recorded), [], lifetimeSeconds),
      holder: state.holder,
    };
  }

  get devClient(): ClientCredentials {
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

  /** The client-credentials grant (RFC 6749 sections 2.3.1 and 4.4). */
  async token(request: TokenRequest): Promise<TokenResult> {
    if (request.grantType === undefined) return tokenError(400, 'invalid_request', 'grant_type is required');
    if (request.grantType !== 'client_credentials')
      return tokenError(400, 'unsupported_grant_type', 'grant_type must be client_credentials');
    const { basic, form } = request;
    if (basic === 'malformed') return tokenError(401, 'invalid_client', 'the Basic credentials could not be decoded');
    if (basic && form.clientSecret !== undefined) {
      return tokenError(
        400,
        'invalid_request',
        'use one client authentication method: a Basic header or client_secret in the form, not both',
      );
    }
    if (basic && form.clientId !== undefined && form.clientId !== basic.id) {
      return tokenError(400, 'invalid_request', 'client_id in the form differs from the client of the Basic header');
    }
    const credentials = basic ?? { id: form.clientId, secret: form.clientSecret };
    if (!credentials.id || !credentials.secret) {
      return tokenError(
        401,
        'invalid_client',
        'client authentication is required (Basic header or client_id and client_secret)',
      );
    }
    const client = this.clients.find((c) => c.id === credentials.id);
    if (!client || !sameSecret(client.secret, credentials.secret))
      return tokenError(401, 'invalid_client', 'unknown client or wrong secret');
    const token = await this.issue(client.agent, this.lifetimeSeconds, client.id);
    return { ok: true, body: { access_token: token, expires_in: this.lifetimeSeconds, token_type: 'Bearer' } };
  }
}
