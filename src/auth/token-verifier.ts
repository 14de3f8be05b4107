import {
  createLocalJWKSet,
  createRemoteJWKSet,
  decodeJwt,
  errors,
  jwtVerify,
  type JWK,
  type JWTHeaderParameters,
  type JWTPayload,
  type JWTVerifyGetKey,
} from 'jose';
import { BoundedCache } from '../bounded-cache.js';
import type { TrustedIssuerConfig } from '../config.js';
import { HttpError } from '../errors.js';
import { isValidIri } from '../rdf/terms.js';

const ALLOWED_ALGORITHMS = ['RS256', 'PS256', 'ES256'];
const CLOCK_TOLERANCE_SECONDS = 30;
/** `typ` values accepted: plain JWTs and RFC 9068 access tokens (`application/` prefix optional, any case). */
const ACCEPTED_TYPES = new Set(['jwt', 'at+jwt']);
const BEARER = /^Bearer\s+([A-Za-z0-9._~+/=-]+)\s*$/i;

interface Issuer {
  keys: JWTVerifyGetKey;
  audience?: string;
}

const unauthenticated = (message: string) => new HttpError(401, 'unauthenticated', { message });

/** How key sets of trusted issuers are fetched (config `outbound`). */
export interface KeySetFetching {
  timeoutMs: number;
  /** A key set is fetched again for an unknown `kid` at most this often (key rotation without a restart). */
  refetchSeconds: number;
}

/** The key set of a trusted issuer could not be fetched: the token is neither valid nor invalid. */
class KeySetUnavailable extends Error {}

/**
 * A remote key set whose failures to fetch are told apart from keys that do not match:
 * the first is our problem (503), the second the token's (401).
 */
function remoteKeySet(jwksUrl: string, fetching: KeySetFetching): JWTVerifyGetKey {
  // Cached; fetched again for an unknown kid once the cooldown since the last fetch has passed.
  const keys = createRemoteJWKSet(new URL(jwksUrl), {
    timeoutDuration: fetching.timeoutMs,
    cooldownDuration: fetching.refetchSeconds * 1000,
  });
  return async (header, token) => {
    try {
      return await keys(header, token);
    } catch (err) {
      if (err instanceof errors.JWKSNoMatchingKey || err instanceof errors.JWKSMultipleMatchingKeys) throw err;
      throw new KeySetUnavailable(`${jwksUrl}: ${(err as Error).message}`);
    }
  };
}

/**
 * Verifies bearer tokens (ONE Record API, "Authentication") against the configured issuers only. Key sets come
 * from configuration, never from the token (`jku`, `x5u`, `jwk` headers are ignored). Verified tokens are cached
 * until they expire, since a token's signature never changes.
 */
export class TokenVerifier {
  private readonly issuers = new Map<string, Issuer>();
  private readonly cache: BoundedCache<string, { agent: string; expiresAt: number }>;

  constructor(
    trusted: TrustedIssuerConfig[],
    cacheSize: number,
    embedded?: { issuer: string; jwk: JWK },
    fetching: KeySetFetching = { timeoutMs: 5000, refetchSeconds: 60 },
  ) {
    this.cache = new BoundedCache(cacheSize);
    if (embedded) this.issuers.set(embedded.issuer, { keys: createLocalJWKSet({ keys: [embedded.jwk] }) });
    for (const t of trusted)
      this.issuers.set(t.issuer, { keys: remoteKeySet(t.jwksUrl, fetching), audience: t.audience });
  }

  /**
   * The `logistics_agent_uri` of a valid token; 401 otherwise, 503 when the issuer's keys cannot
   * be fetched. A token verified before answers synchronously: that is every request but a
   * client's first, so the common path allocates no promise.
   */
  verify(authorization: string | undefined): string | Promise<string> {
    // `Bearer <token>` as nearly every client writes it: a token in the cache passed the pattern
    // below when it was verified, so the header would match it with this very token.
    const plain = authorization?.startsWith('Bearer ') ? authorization.slice(7) : undefined;
    const known = plain === undefined ? undefined : this.cache.get(plain);
    if (known && known.expiresAt + CLOCK_TOLERANCE_SECONDS * 1000 > Date.now()) return known.agent;
    const match = BEARER.exec(authorization ?? '');
    if (!match) throw unauthenticated('an Authorization: Bearer <token> header is required');
    const token = match[1];
    const cached = this.cache.get(token);
    if (cached && cached.expiresAt + CLOCK_TOLERANCE_SECONDS * 1000 > Date.now()) return cached.agent;
    if (cached) this.cache.delete(token);
    return this.verifySignature(token);
  }

  private async verifySignature(token: string): Promise<string> {
    let issuerName: string | undefined;
    try {
      issuerName = decodeJwt(token).iss;
    } catch {
      throw unauthenticated('the token is not a JWT');
    }
    const issuer = issuerName ? this.issuers.get(issuerName) : undefined;
    if (!issuerName || !issuer) throw unauthenticated('the token was not issued by a trusted identity provider');
    let payload: JWTPayload;
    try {
      let protectedHeader: JWTHeaderParameters;
      ({ payload, protectedHeader } = await jwtVerify(token, issuer.keys, {
        issuer: issuerName,
        algorithms: ALLOWED_ALGORITHMS,
        clockTolerance: CLOCK_TOLERANCE_SECONDS,
        audience: issuer.audience,
        requiredClaims: ['exp', 'logistics_agent_uri'],
      }));
      if (!ACCEPTED_TYPES.has((protectedHeader.typ ?? '').toLowerCase().replace(/^application\//, '')))
        throw unauthenticated('the token typ must be JWT or at+jwt');
    } catch (err) {
      if (err instanceof KeySetUnavailable) {
        throw new HttpError(503, 'key_set_unavailable', {
          message: `the keys of identity provider ${issuerName} could not be fetched; try again later`,
        });
      }
      if (err instanceof errors.JWTExpired) throw unauthenticated('the token has expired');
      if (err instanceof errors.JOSEError) throw unauthenticated(`the token is not valid (${err.code})`);
      throw err;
    }
    const agent = payload.logistics_agent_uri;
    if (typeof agent !== 'string' || !isValidIri(agent)) throw unauthenticated('logistics_agent_uri must be an IRI');
    this.cache.set(token, { agent, expiresAt: (payload.exp as number) * 1000 });
    return agent;
  }
}
