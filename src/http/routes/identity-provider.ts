import express, { type Router } from 'express';
import type { IdentityProvider, TokenRequest } from '../../auth/identity-provider.js';

function basicCredentials(header: string | undefined): { id: string; secret: string } | undefined {
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header ?? '');
  if (!match) return undefined;
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return undefined;
  return { id: decodeURIComponent(decoded.slice(0, colon)), secret: decodeURIComponent(decoded.slice(colon + 1)) };
}

/** The embedded identity provider's token endpoint and JWKS, under /idp. */
export function identityProviderRoutes(idp: IdentityProvider): Router {
  const router = express.Router();
  router.get('/idp/.well-known/jwks.json', (_req, res) => {
    res.setHeader('Cache-Control', 'public, max-age=300').json(idp.jwks());
  });
  router.post('/idp/token', express.urlencoded({ extended: false, limit: '16kb' }), async (req, res) => {
    const form = (req.body ?? {}) as Record<string, unknown>;
    const text = (name: string) => (typeof form[name] === 'string' ? (form[name] as string) : undefined);
    const basic = basicCredentials(req.headers.authorization);
    const request: TokenRequest = {
      grantType: text('grant_type'),
      clientId: basic?.id ?? text('client_id'),
      clientSecret: basic?.secret ?? text('client_secret'),
    };
    const result = await idp.token(request);
    res.setHeader('Cache-Control', 'no-store');
    if (!result.ok && result.status === 401 && basic) res.setHeader('WWW-Authenticate', 'Basic realm="token"');
    res.status(result.ok ? 200 : result.status).json(result.body);
  });
  return router;
}
