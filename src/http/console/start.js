// What the landing page needs first. index.html loads this module on its own, ahead of main.js and
// the other modules: it reads the sign-in link and the route, and sends the object list's request at
// once, with the token the console is about to sign in with (main.js signs in as before).
import { getJson, query, session } from './api.js';

/** `#/name?a=b` as a page name and its parameters. */
export function routeOf(hash) {
  const [path, search = ''] = hash.replace(/^#\/?/, '').split('?');
  return { name: path || 'objects', params: new URLSearchParams(search) };
}

/**
 * A link `console#token=<bearer>` signs in directly, `console#token=<bearer>&open=/object?iri=…` on
 * that page (any route of the console after `open=`, as it is written after `#`): its token and route,
 * read as the page opens (main.js takes the token out of the address bar at once).
 */
const link = /^#token=([^&]+)(?:&open=(\/.*))?$/.exec(location.hash);
export const signInLink = link && { token: decodeURIComponent(link[1]), route: `#${link[2] ?? '/objects'}` };

/** The object list's page size. */
export const LIST_PAGE_SIZE = 50;

/** The list route for the object list's parameters (`#/objects?type=…&id=…&changed-after=…&skip=…`). */
function objectListPath(params) {
  const local = params.get('changed-after');
  return `/internal/logistics-objects${query({ type: params.get('type'), id: params.get('id'), 'changed-after': local && new Date(local).toISOString(), skip: Number(params.get('skip') ?? 0), limit: LIST_PAGE_SIZE })}`;
}

/** The list asked for as the page opened, until the first list shown takes it. */
let early;
{
  const token = signInLink?.token ?? session.token;
  const { name, params } = routeOf(signInLink?.route ?? location.hash);
  if (token && name === 'objects') {
    const path = objectListPath(params);
    early = { token, path, answer: getJson(path, { token }) };
    // Whoever takes it handles its failure; if no one does (the sign-in was refused), it is no error of the page.
    early.answer.catch(() => {});
  }
}

/** The object list for `params`: the answer asked for as the page opened when it is the same list, for the same token. */
export function objectList(params) {
  const path = objectListPath(params);
  const taken = early;
  early = undefined;
  if (taken && taken.path === path && taken.token === session.token) return taken.answer;
  return getJson(path);
}
