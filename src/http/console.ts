import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import express, { type Request, type Response, type Router } from 'express';
import { HttpError } from '../errors.js';
import { projectFile } from '../project-files.js';
import { bundleModules } from './console-bundle.js';

/**
 * Same-origin scripts (the other pages' modules) and the page's own scripts and style by their hashes; the
 * console calls the API of the origin that served it.
 */
const contentSecurityPolicy = (scriptHashes: string[], styleHashes: string[]) => {
  const hashes = (list: string[]) => list.map((hash) => `'sha256-${hash}'`).join(' ');
  return [
    "default-src 'none'",
    `script-src 'self' ${hashes(scriptHashes)}`,
    `style-src ${hashes(styleHashes)}`,
    "connect-src 'self'",
    "img-src 'self' data:",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
};
/** What the assets are: the other pages' modules. */
const MODULE_TYPE = 'text/javascript; charset=utf-8';
/** A placeholder in index.html: `{{name}}`. */
const PLACEHOLDER = /\{\{([\w.-]+)\}\}/g;
/** The module the page starts: written into it with all it imports statically, as one script (console-bundle.ts). */
const ENTRY_MODULE = 'main.js';
/**
 * The script written first into the page's one script: it sends the landing page's list request before the modules
 * run.
 */
const START_SCRIPT = 'start.js';
/** The stylesheet, written into index.html. */
const STYLESHEET = 'console.css';
/** What would end an element of the page's own text early, or put its parser in another state. */
const ENDS_SCRIPT = /<\/script|<!--/i;
const ENDS_STYLE = /<\/style/i;

/** The base64 SHA-256 of a page's own script or style: a Content-Security-Policy allows it as `'sha256-{hash}'`. */
export const sha256 = (text: string): string => createHash('sha256').update(text).digest('base64');

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
/** `text` for an HTML attribute value or text. */
export const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]);

interface StaticFile {
  body: Buffer;
  mediaType: string;
  etag: string;
}

const staticFile = (body: Buffer, mediaType: string): StaticFile => ({
  body,
  mediaType,
  etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`,
});

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
 * The web console (docs/console.md), served without a token: its files hold no data and its calls
 * carry the user's token. The page carries its stylesheet, landing scripts (allowed by hash) and the
 * server's base URL, so it opens with no request but its own and the API's; the other modules live under
 * a path named by a hash of the files, cached for good, while the page is revalidated (ETag).
 */
export function consoleRoutes(baseUrl: string): Router {
  const dir = projectFile('src/http/console');
  const sources = new Map<string, string>();
  for (const name of readdirSync(dir).sort()) sources.set(name, readFileSync(join(dir, name), 'utf8'));
  const version = createHash('sha256')
    .update([...sources].map(([name, text]) => `${name}\n${text}`).join('\n'))
    .digest('hex')
    .slice(0, 16);
  const assetsUrl = `console/assets/${version}/`;
  const modules = new Map([...sources].filter(([name]) => extname(name) === '.js' && name !== START_SCRIPT));
  // The modules the script in the page holds are served as modules that export what it kept for them, for the other
  // pages' modules.
  const { text: bundle, reExports } = bundleModules(ENTRY_MODULE, modules, `./${assetsUrl}`);
  const assets = new Map(
    [...modules, ...reExports]
      .filter(([name]) => name !== ENTRY_MODULE)
      .map(([name, text]) => [name, staticFile(Buffer.from(text), MODULE_TYPE)]),
  );

  const scripts = { [START_SCRIPT]: sources.get(START_SCRIPT)!, [ENTRY_MODULE]: bundle };
  const styles = { [STYLESHEET]: sources.get(STYLESHEET)! };
  for (const [name, text] of Object.entries(scripts))
    if (ENDS_SCRIPT.test(text)) throw new Error(`the console's ${name} would end its <script> element early`);
  for (const [name, text] of Object.entries(styles))
    if (ENDS_STYLE.test(text)) throw new Error(`the console's ${name} would end its <style> element early`);
  const values: Record<string, string> = { ...scripts, ...styles, assets: assetsUrl, 'base-url': escapeHtml(baseUrl) };
  // One pass, so nothing written in is read as a placeholder; a function, so `$` in it is no pattern.
  const html = sources.get('index.html')!.replace(PLACEHOLDER, (placeholder, name: string) => {
    if (values[name] === undefined)
      throw new Error(`index.html names ${placeholder}, which the console does not fill in`);
    return values[name];
  });
  // The page's scripts and styles as written (none of them ends early: checked above), by their hashes.
  const hashesOf = (tag: string) =>
    [...html.matchAll(new RegExp(`<${tag}>([^]*?)</${tag}>`, 'g'))].map((element) => sha256(element[1]));
  const policy = contentSecurityPolicy(hashesOf('script'), hashesOf('style'));
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
