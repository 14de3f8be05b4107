// The one way the console talks to the server: the public API, with the signed-in caller's token.
import { afterNextPaint } from './dom.js';

/** Defined by start.js, which runs before the modules: the token's key, the token the page opens with, query strings. */
const { TOKEN_KEY, token: openingToken, query } = window.consoleStart;
export { query };
/** The API's root on this origin: the console is served at {root}console. */
const API_ROOT = new URL('.', location.href).href;
/**
 * The server's public base URL (its IRIs start with it): the page carries it (src/http/console.ts
 * fills it in when serving index.html); a page without it learns it at sign-in.
 */
const BASE_URL_IN_PAGE = document.querySelector('meta[name="onerecord-base-url"]')?.content ?? '';
let baseUrl = (BASE_URL_IN_PAGE || API_ROOT).replace(/\/$/, '');

export class ApiError extends Error {
  constructor(status, message) {
    super(`${status}: ${message}`);
    this.status = status;
  }
}

/**
 * Settles once `shown` (the page the caller shows first) has settled and been painted: work that page need
 * not wait for (the sign-in check, keeping the token) then stays out of its way; the check, `GET /`, sent
 * with the first page's own call, and its answer came in the way of that call's answer (traced). A page
 * without the base URL waits for the check: at once, then.
 */
const later = (shown) => (BASE_URL_IN_PAGE ? Promise.resolve(shown).then(afterNextPaint) : Promise.resolve());

/**
 * Settles once the server's base URL is learnt for the current token (GET /, which also checks the
 * token). Only when the page does not carry it do the pages' calls wait for it, and then only to be
 * answered, not to go out: the first page is one round trip away, not two.
 */
let serverKnown = Promise.resolve();

/**
 * The token signed in with, and kept for the tab (sessionStorage: a reload stays signed in) once the
 * first page is shown (`later`), or as the page is left if that comes first: the first use of
 * sessionStorage costs main-thread time the landing page's first rows would wait for.
 */
let signedInToken = openingToken;
function keepToken() {
  if (signedInToken) sessionStorage.setItem(TOKEN_KEY, signedInToken);
  else sessionStorage.removeItem(TOKEN_KEY);
}
window.addEventListener('pagehide', keepToken);

export const session = {
  get token() {
    return signedInToken;
  },
  /**
   * Signs in with the token and checks it against the server, both once the page is shown (`later`): the
   * page need not wait for the check (its own call with the token is refused as well when the token is).
   * A token the server refuses is dropped again; one whose check did not come back (the page was left as
   * it went out, say) is kept.
   */
  signIn(token, shown) {
    signedInToken = token;
    const after = later(shown);
    after.then(keepToken);
    serverKnown = after.then(() => learnServer(token));
    return serverKnown.catch((err) => {
      if (err instanceof ApiError) this.signOut();
      throw err;
    });
  },
  /** After a reload: checks the kept token again, once the page is shown (`later`); an expired one signs out. */
  async resume(shown) {
    const token = this.token;
    if (!token) return;
    serverKnown = later(shown).then(() => learnServer(token));
    try {
      await serverKnown;
    } catch (err) {
      if (err.status === 401) this.signOut();
      else throw err;
    }
  },
  signOut() {
    signedInToken = null;
    keepToken();
  },
};

/**
 * How the console's calls use the browser's HTTP cache: not at all. The API's answers carry
 * Last-Modified but neither Cache-Control nor Vary, so a browser may reuse one on its own: an
 * object's Turtle for its JSON-LD (seen in the tests), or a revision that is no longer the latest.
 */
const NOT_CACHED = 'no-store';

/** Reads the server's base URL from its ServerInformation (GET /, which needs a valid token). */
async function learnServer(token) {
  const res = await fetch(API_ROOT, { headers: { Authorization: `Bearer ${token}`, Accept: 'application/ld+json' }, cache: NOT_CACHED });
  if (!res.ok) throw await errorOf(res);
  const info = await res.json();
  baseUrl = String(info['api:hasServerEndpoint']?.['@value'] ?? baseUrl).replace(/\/$/, '');
}

/** A token of the embedded identity provider for a client (client-credentials grant). */
export async function clientToken(clientId, clientSecret) {
  const res = await fetch(new URL('idp/token', API_ROOT), {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret }),
  });
  const body = await res.json().catch(() => ({}));
  if (!res.ok) throw new ApiError(res.status, body.error_description ?? body.error ?? 'the token request failed');
  return body.access_token;
}

/** The URL on this origin of a server IRI or path (IRIs carry the public base URL, which may be another host name). */
export function localUrl(iriOrPath) {
  if (iriOrPath.startsWith(`${baseUrl}/`)) return API_ROOT + iriOrPath.slice(baseUrl.length + 1);
  return new URL(iriOrPath.replace(/^\//, ''), API_ROOT).href;
}

/** True for IRIs of this server's Logistics Objects (the console can open them). */
export function isLocalObject(iri) {
  return iri.startsWith(`${baseUrl}/logistics-objects/`) && !iri.slice(baseUrl.length).includes('/logistics-events');
}

/** The api:Error's messages, or the status text. */
async function errorOf(res) {
  const text = await res.text();
  try {
    const details = [].concat(JSON.parse(text)['api:hasErrorDetail'] ?? []);
    const message = details.map((d) => d['api:hasMessage']).filter(Boolean).join('; ');
    if (message) return new ApiError(res.status, message);
  } catch {
    // Not an api:Error: the status says it.
  }
  return new ApiError(res.status, res.statusText || 'request failed');
}

/** Calls the API with the session's token (or `token`); rejects with an ApiError unless the status is 2xx. */
export async function request(iriOrPath, { method = 'GET', accept, contentType, body, token = session.token } = {}) {
  const headers = { Authorization: `Bearer ${token}` };
  if (accept) headers.Accept = accept;
  if (contentType) headers['Content-Type'] = contentType;
  // Without the base URL in the page: a path goes at once; an IRI is mapped with the base URL, so it waits for it.
  if (!BASE_URL_IN_PAGE && !iriOrPath.startsWith('/')) await serverKnown;
  return answerOf(fetch(localUrl(iriOrPath), { method, headers, body, cache: NOT_CACHED }));
}

/** The response of a call (a fetch promise); rejects with an ApiError unless the status is 2xx. */
export async function answerOf(response) {
  // The caller reads IRIs out of the answer: known by then.
  if (!BASE_URL_IN_PAGE) await serverKnown;
  const res = await response;
  if (!res.ok) throw await errorOf(res);
  return res;
}

export const getJson = async (iriOrPath, options = {}) => (await request(iriOrPath, { ...options, accept: 'application/json' })).json();
export const getText = async (iriOrPath, accept) => (await request(iriOrPath, { accept })).text();
export const postJsonLd = (iriOrPath, document) => request(iriOrPath, { method: 'POST', contentType: 'application/ld+json', body: JSON.stringify(document) });
