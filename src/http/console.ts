import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import express, { type Request, type Response, type Router } from 'express';
import { HttpError } from '../errors.js';
import { projectFile } from '../project-files.js';

/** Same-origin scripts and styles only; the console calls the API of the origin that served it. */
const CONTENT_SECURITY_POLICY = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
const MEDIA_TYPES: Record<string, string> = { '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8', '.svg': 'image/svg+xml' };
/** What index.html names the asset folder by: replaced with its versioned path. */
const ASSETS_PLACEHOLDER = /\{\{assets\}\}/g;
/** Where index.html lists the modules to preload: replaced with every one of them. */
const MODULE_PRELOADS_PLACEHOLDER = '{{module-preloads}}';
/** The module index.html starts; the others are what it imports, directly or not. */
const ENTRY_MODULE = 'main.js';

interface StaticFile {
  body: Buffer;
  mediaType: string;
  etag: string;
}

const staticFile = (body: Buffer, mediaType: string): StaticFile => ({ body, mediaType, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"` });

/** 304 when the client holds this version, else the file. */
function send(req: Request, res: Response, file: StaticFile, cacheControl: string): void {
  res.setHeader('Content-Security-Policy', CONTENT_SECURITY_POLICY);
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
 * they are cached for good; the page itself is revalidated (ETag) and names the current hash.
 */
export function consoleRoutes(): Router {
  const dir = projectFile('src/http/console');
  const assets = new Map<string, StaticFile>();
  for (const name of readdirSync(dir).sort()) {
    const mediaType = MEDIA_TYPES[extname(name)];
    if (mediaType) assets.set(name, staticFile(readFileSync(join(dir, name)), mediaType));
  }
  const version = createHash('sha256')
    .update([...assets].map(([name, file]) => `${name} ${file.etag}`).join('\n'))
    .digest('hex')
    .slice(0, 16);
  // Every module is asked for while the page is parsed: found import by import, each level of
  // imports cost the landing page 10-20 ms, from the cache too (scripts/bench/console.ts).
  const preloads = [...assets.keys()].filter((name) => name.endsWith('.js') && name !== ENTRY_MODULE).map((name) => `<link rel="modulepreload" href="{{assets}}/${name}">`);
  const html = readFileSync(join(dir, 'index.html'), 'utf8').replace(MODULE_PRELOADS_PLACEHOLDER, preloads.join('\n')).replace(ASSETS_PLACEHOLDER, `console/assets/${version}`);
  const page = staticFile(Buffer.from(html), 'text/html; charset=utf-8');

  const router = express.Router();
  router.get('/console', (req, res) => {
    // The page names its assets relative to /console: from /console/ they would resolve one level too deep.
    if (req.path.endsWith('/')) return res.redirect(301, '../console');
    send(req, res, page, 'no-cache');
  });
  router.get('/console/assets/:version/:name', (req, res, next) => {
    const file = req.params.version === version ? assets.get(req.params.name) : undefined;
    // Answered here, not by the authenticated routes: an old page asking for old assets gets 404, not 401.
    if (!file) return next(new HttpError(404, 'no_route', { message: `no console file at ${req.path}` }));
    send(req, res, file, 'public, max-age=31536000, immutable');
  });
  return router;
}
