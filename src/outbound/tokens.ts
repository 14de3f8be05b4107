import type { IdentityProvider } from '../auth/identity-provider.js';
import type { OutboundClient } from './http-client.js';

/** The bearer token this server's outbound calls carry: one for its own data holder. */
export interface TokenSource {
  token(): Promise<string>;
}

/** A token is renewed this long before it expires, so none expires on the way. */
const RENEW_BEFORE_MS = 60_000;

/** Keeps the token `fetch` gives until shortly before it expires; concurrent callers share one fetch. */
class CachedToken implements TokenSource {
  private current: { value: string; renewAt: number } | undefined;
  private pending: Promise<string> | undefined;

  constructor(private readonly fetchToken: () => Promise<{ value: string; expiresInSeconds: number }>) {}

  token(): Promise<string> {
    if (this.current && Date.now() < this.current.renewAt) return Promise.resolve(this.current.value);
    this.pending ??= this.fetchToken()
      .then(({ value, expiresInSeconds }) => {
        this.current = { value, renewAt: Date.now() + Math.max(0, expiresInSeconds * 1000 - RENEW_BEFORE_MS) };
        return value;
      })
      .finally(() => {
        this.pending = undefined;
      });
    return this.pending;
  }
}

/** Tokens for the data holder signed by the embedded identity provider. */
export function embeddedTokens(idp: IdentityProvider, holder: string, lifetimeSeconds: number): TokenSource {
  return new CachedToken(async () => ({
    value: await idp.issue(holder, lifetimeSeconds),
    expiresInSeconds: lifetimeSeconds,
  }));
}

export interface ClientCredentials {
  tokenUrl: string;
  clientId: string;
  clientSecret: string;
}

/** Tokens from an external identity provider by the client-credentials grant (Basic client authentication). */
export function clientCredentialsTokens(client: OutboundClient, credentials: ClientCredentials): TokenSource {
  return new CachedToken(async () => {
    const basic = Buffer.from(
      `${encodeURIComponent(credentials.clientId)}:${encodeURIComponent(credentials.clientSecret)}`,
    ).toString('base64');
    const res = await client.request(credentials.tokenUrl, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/x-www-form-urlencoded',
        Authorization: `Basic ${basic}`,
        Accept: 'application/json',
      },
      body: new URLSearchParams({ grant_type: 'client_credentials' }).toString(),
    });
    if (res.status !== 200) throw new Error(`token request to ${credentials.tokenUrl} answered ${res.status}`);
    const body = JSON.parse(res.body) as { access_token?: unknown; expires_in?: unknown };
    if (typeof body.access_token !== 'string')
      throw new Error(`token request to ${credentials.tokenUrl} gave no access_token`);
    return { value: body.access_token, expiresInSeconds: typeof body.expires_in === 'number' ? body.expires_in : 300 };
  });
}
