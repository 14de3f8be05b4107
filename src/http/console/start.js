// The console's first lines, written by src/http/console.ts into index.html at the start of the page's
// one script (allowed by its hash): they send the object list's request as the page opens, with the
// token the console is about to sign in with, before the modules run (scripts/bench/console.ts). No
// module: the modules take what they define from `window.consoleStart`.
'use strict';
window.consoleStart = (() => {
  /** Where the tab keeps the token it signed in with (sessionStorage). */
  const TOKEN_KEY = 'onerecord-console-token';

  /** A query string from the entries whose value is given. */
  function query(params) {
    const text = new URLSearchParams(Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== '')).toString();
    return text ? `?${text}` : '';
  }

  /** `#/name?a=b` as a page name and its parameters. */
  function routeOf(hash) {
    const [path, search = ''] = hash.replace(/^#\/?/, '').split('?');
    return { name: path || 'objects', params: new URLSearchParams(search) };
  }

  /**
   * A link `console#token=<bearer>` signs in directly, `console#token=<bearer>&open=/object?iri=…` on
   * that page (any route of the console after `open=`, as it is written after `#`): its token and route,
   * read as the page opens (main.js takes the token out of the address bar at once).
   */
  const link = /^#token=([^&]+)(?:&open=(\/.*))?$/.exec(location.hash);
  const signInLink = link && { token: decodeURIComponent(link[1]), route: `#${link[2] ?? '/objects'}` };

  /** The object list's page size. */
  const LIST_PAGE_SIZE = 50;

  /** The list route for the object list's parameters (`#/objects?type=…&id=…&changed-after=…&skip=…`). */
  function objectListPath(params) {
    const local = params.get('changed-after');
    return `/internal/logistics-objects${query({ type: params.get('type'), id: params.get('id'), 'changed-after': local && new Date(local).toISOString(), skip: Number(params.get('skip') ?? 0), limit: LIST_PAGE_SIZE })}`;
  }

  /**
   * The list asked for as the page opened, until the first list shown takes it: `answer`, the fetch
   * Response, and `list`, its body read as JSON when it is a 2xx (else undefined, the body left for the
   * error). The body is read as soon as it is in, not when the modules ask: read then, it came a task
   * later, after a paint of the page without its rows (traced).
   */
  let early;
  /** The token the page opens with: the link's (sessionStorage is not read then), else the one kept for the tab. */
  const token = signInLink?.token ?? sessionStorage.getItem(TOKEN_KEY);
  const { name, params } = routeOf(signInLink?.route ?? location.hash);
  if (token && name === 'objects') {
    const path = objectListPath(params);
    // As api.js calls the API; relative to the page, as its API root is (the server may be under a path).
    const answer = fetch(path.slice(1), { headers: { Authorization: `Bearer ${token}`, Accept: 'application/json' }, cache: 'no-store' });
    early = { token, path, answer, list: answer.then((res) => (res.ok ? res.json() : undefined)) };
    // Whoever takes it handles its failure; if no one does (the sign-in was refused), it is no error of the page.
    early.list.catch(() => {});
  }

  /** The list asked for as the page opened (`{ answer, list }`) when it is for `path` with `token`, else undefined; taken once. */
  function takeEarlyList(path, token) {
    const taken = early;
    early = undefined;
    return taken && taken.path === path && taken.token === token ? taken : undefined;
  }

  return { TOKEN_KEY, token, query, routeOf, signInLink, LIST_PAGE_SIZE, objectListPath, takeEarlyList };
})();
