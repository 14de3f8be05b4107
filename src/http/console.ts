import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import express, { type Request, type Response, type Router } from 'express';
import { HttpError } from '../errors.js';
import { projectFile } from '../project-files.js';
import { bundleModules } from './console-bundle.js';

/**
 * Same-origin scripts and styles only, and the one script in the page, by its hash; the console calls
 * the API of the origin that served it.
 */
const contentSecurityPolicy = (inlineScriptHash: string) =>
  `default-src 'none'; script-src 'self' 'sha256-${inlineScriptHash}'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`;
const MEDIA_TYPES: Record<string, string> = { '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8', '.svg': 'image/svg+xml' };
/** What index.html names the asset folder by: replaced with its versioned path. */
const ASSETS_PLACEHOLDER = /\{\{assets\}\}/g;
/** Where index.html names the server's public base URL (a `<meta>` attribute): replaced with it, HTML-escaped. */
const BASE_URL_PLACEHOLDER = '{{base-url}}';
/** The module index.html starts: served as one module with all it imports statically (console-bundle.ts). */
const ENTRY_MODULE = 'main.js';
/** The script written into index.html (not a module: it runs while the page is parsed), in place of its placeholder. */
const INLINE_SCRIPT = 'start.js';
const INLINE_SCRIPT_PLACEHOLDER = '{{start.js}}';

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
/** `text` for an HTML attribute value or text. */
export const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]);

interface StaticFile {
  body: Buffer;
  mediaType: string;
  etag: string;
}

const staticFile = (body: Buffer, mediaType: string): StaticFile => ({ body, mediaType, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"` });

/** 304 when the client holds this version, else the file. */
function send(req: Request, res: Response, file: StaticFile, cacheControl: string, policy: string): void {
  res.setHeader('Content-Security-Policy', policy);
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.setHeader('Cache-Control', cacheControl);
  res.setHeader('ETag', file.etag);
  if (req.headers['if-none-match'] === file.etag) {
    res.status(304).end();
    return;
  }
  res.setHeader('Content-Type', file.mediaType).send(file.body);
}

/**
 * The web console (docs/console.md): the files of `src/http/console/`, read once when the app is built
 * (no build step), served without a token: they hold no data, and every call they make carries the
 * token the user signs in with. Assets live under a path named by a hash of their content, so
 * they are cached for good; the page itself is revalidated (ETag) and names the current hash. The page
 * carries the server's public base URL (what its IRIs start with), so the console's first call need
 * not wait for `GET /` to learn it.
 */
export function consoleRoutes(baseUrl: string): Router {
  const dir = projectFile('src/http/console');
  const files = new Map<string, Buffer>();
  for (const name of readdirSync(dir).sort()) if (MEDIA_TYPES[extname(name)] && name !== INLINE_SCRIPT) files.set(name, readFileSync(join(dir, name)));
  const modules = new Map([...files].filter(([name]) => extname(name) === '.js').map(([name, text]) => [name, text.toString('utf8')]));
  // The landing page's modules as one; each bundled module is served as a re-export of it, for the other pages' modules.
  const { text: bundle, reExports } = bundleModules(ENTRY_MODULE, modules);
  for (const [name, text] of [[ENTRY_MODULE, bundle], ...reExports] as const) files.set(name, Buffer.from(text));
  const assets = new Map([...files].map(([name, body]) => [name, staticFile(body, MEDIA_TYPES[extname(name)])]));
  const inlineScript = readFileSync(join(dir, INLINE_SCRIPT), 'utf8');
  if (/<\/script/i.test(inlineScript)) throw new Error(`${INLINE_SCRIPT} would end its <script> element early`);
  const policy = contentSecurityPolicy(createHash('sha256').update(inlineScript).digest('base64'));
  const version = createHash('sha256')
    .update([...assets].map(([name, file]) => `${name} ${file.etag}`).join('\n'))
    .digest('hex')
    .slice(0, 16);
  // The script and the base URL last, so nothing in them is read as a placeholder; functions, so `$` in them is no pattern.
  const html = readFileSync(join(dir, 'index.html'), 'utf8')
    .replace(ASSETS_PLACEHOLDER, `console/assets/${version}`)
    .replace(INLINE_SCRIPT_PLACEHOLDER, () => inlineScript)
    .replace(BASE_URL_PLACEHOLDER, () => escapeHtml(baseUrl));
  const page = staticFile(Buffer.from(html), 'text/html; charset=utf-8');

  const router = express.Router();
  router.get('/console', (req, res) => {
    // The page names its assets relative to /console: from /console/ they would resolve one level too deep.
    if (req.path.endsWith('/')) return res.redirect(301, '../console');
    send(req, res, page, 'no-cache', policy);
  });
  router.get('/console/assets/:version/:name', (req, res, next) => {
    const file = req.params.version === version ? assets.get(req.params.name) : undefined;
    // Answered here, not by the authenticated routes: an old page asking for old assets gets 404, not 401.
    if (!file) return next(new HttpError(404, 'no_route', { message: `no console file at ${req.path}` }));
    send(req, res, file, 'public, max-age=31536000, immutable', policy);
  });
  return router;
}
