import express, { type Router } from 'express';
import type { ClientCredentials, IdentityProvider, TokenRequest } from '../../auth/identity-provider.js';
import { readForm } from '../body.js';
import { methodNotAllowed } from '../documents.js';
import { CONTENT_LANGUAGE } from '../negotiation.js';

/** application/x-www-form-urlencoded decoding, which RFC 6749 section 2.3.1 applies to Basic credentials. */
function formDecode(value: string): string {
  return decodeURIComponent(value.replace(/\+/g, ' '));
}

/** Credentials of an `Authorization: Basic` header; undefined without one, 'malformed' if undecodable. */
function basicCredentials(header: string | undefined): ClientCredentials | 'malformed' | undefined {
  const match = /^Basic\s+(\S*)\s*$/i.exec(header ?? '');
  if (!match) return undefined;
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(match[1])) return 'malformed';
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return 'malformed';
  try {
    return { id: formDecode(decoded.slice(0, colon)), secret: formDecode(decoded.slice(colon + 1)) };
  } catch {
    return 'malformed';
  }
}

/** The embedded identity provider's token endpoint and JWKS (mounted under /idp). */
export function identityProviderRoutes(idp: IdentityProvider): Router {
  const router = express.Router();
  router.use((_req, res, next) => {
    res.setHeader('Content-Language', CONTENT_LANGUAGE);
    next();
  });
  router.get('/.well-known/jwks.json', (_req, res) => {
    res.setHeader('Cache-Control', 'public, max-age=300').json(idp.jwks());
  });
  router.post('/token', readForm(16 * 1024), async (req, res) => {
    const form = (req.body ?? {}) as Record<string, unknown>;
    const text = (name: string) => (typeof form[name] === 'string' ? (form[name] as string) : undefined);
    const basic = basicCredentials(req.headers.authorization);
    const request: TokenRequest = {
      grantType: text('grant_type'),
      basic,
      form: { clientId: text('client_id'), clientSecret: text('client_secret') },
    };
    const result = await idp.token(request);
    res.setHeader('Cache-Control', 'no-store');
    if (!result.ok && result.status === 401 && basic) res.setHeader('WWW-Authenticate', 'Basic realm="token"');
    res.status(result.ok ? 200 : result.status).json(result.body);
  });
  router.all('/token', methodNotAllowed('POST'));
  router.all('/.well-known/jwks.json', methodNotAllowed('GET, HEAD'));
  return router;
}
