import { createHmac } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  SignJWT,
  exportJWK,
  generateKeyPair,
  importJWK,
  type CryptoKey,
  type JWK,
  type JWTHeaderParameters,
  type JWTPayload,
} from 'jose';
import { noteSecret } from './log-sink.js';
import { startListener, type LoopbackListener } from './loopback.js';

const b64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
export const nowSeconds = () => Math.floor(Date.now() / 1000);

export interface SigningKey {
  alg: string;
  kid: string;
  privateKey: CryptoKey;
  publicJwk: JWK;
}

/** The embedded identity provider's key as stored in a server's data directory. */
export async function embeddedKey(dataDir: string): Promise<SigningKey & { issuer: string }> {
  const state = JSON.parse(await readFile(join(dataDir, 'identity-provider.json'), 'utf8')) as {
    kid: string;
    privateJwk: JWK;
    issuer: string;
  };
  const { kty, n, e } = state.privateJwk;
  return {
    alg: 'RS256',
    kid: state.kid,
    issuer: state.issuer,
    privateKey: (await importJWK(state.privateJwk, 'RS256')) as CryptoKey,
    publicJwk: { kty, n, e, kid: state.kid, alg: 'RS256', use: 'sig' },
  };
}

export async function newSigningKey(alg: 'RS256' | 'PS256' | 'ES256' | 'RS384', kid: string): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  return { alg, kid, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } };
}

/** Signs `payload` with `key`; `header` adds to or overrides the protected header (typ JWT, kid, alg by default). */
export function sign(key: SigningKey, payload: JWTPayload, header: Partial<JWTHeaderParameters> = {}): Promise<string> {
  const protectedHeader = { alg: key.alg, typ: 'JWT', kid: key.kid, ...header } as JWTHeaderParameters;
  for (const name of Object.keys(protectedHeader) as (keyof JWTHeaderParameters)[])
    if (protectedHeader[name] === undefined) delete protectedHeader[name];
  return new SignJWT(payload)
    .setProtectedHeader(protectedHeader)
    .sign(key.privateKey)
    .then((token) => {
      noteSecret(token);
      return token;
    });
}

/** A token with `alg: none` and no signature. */
export function unsignedToken(payload: JWTPayload): string {
  return `${b64url({ alg: 'none', typ: 'JWT' })}.${b64url(payload)}.`;
}

/** The key-confusion attack: HS256 with the RSA public key (as PEM text) as the HMAC secret. */
export function hmacWithPublicKey(publicKeyPem: string, kid: string, payload: JWTPayload): string {
  const input = `${b64url({ alg: 'HS256', typ: 'JWT', kid })}.${b64url(payload)}`;
  return `${input}.${createHmac('sha256', publicKeyPem).update(input).digest('base64url')}`;
}

/** A second, real identity provider: its JWKS served over loopback HTTP. */
export async function startJwksServer(keys: SigningKey[]): Promise<LoopbackListener> {
  const jwks = JSON.stringify({ keys: keys.map((k) => k.publicJwk) });
  return startListener((_req, res) => res.writeHead(200, { 'Content-Type': 'application/json' }).end(jwks));
}
