// Start-up: sign-in (client credentials, a pasted token, or #token=), then the hash routes.
import { clientToken, session } from './api.js';
import { field, h, notify } from './dom.js';
import { objectListPage } from './object-list-page.js';

/** What start.js, the script in the page, read from the address as the page opened. */
const { routeOf, signInLink } = window.consoleStart;

/**
 * Each page's module, loaded when the page is first shown. Only the landing page is imported
 * above: the landing page waits for its own modules and no others (each module read, even from the
 * cache, cost it a few ms; scripts/bench/console.ts).
 */
const PAGES = {
  objects: async () => objectListPage,
  object: async () => (await import('./object-page.js')).objectPage,
  requests: async () => (await import('./requests-page.js')).requestsPage,
  pubsub: async () => (await import('./pubsub-page.js')).pubsubPage,
  health: async () => (await import('./health-page.js')).healthPage,
};
const main = document.getElementById('main');
const nav = document.getElementById('nav');

/** Counts the routes asked for: a page whose module arrives after the next route was asked for is not shown. */
let routesAsked = 0;
/** Settles once the first page is shown. */
let firstPageShown;
const firstPage = new Promise((resolve) => (firstPageShown = resolve));

function show(title, content) {
  document.title = `${title} - ONE Record console`;
  main.replaceChildren(...[content].flat(Infinity).filter(Boolean));
  firstPageShown();
  // A page shown after another gets the focus, so a screen reader reads it; the first one leaves it at the
  // top of the document, the skip link first, as any page opens (and does not wait for the layout focusing forces).
  if (routesAsked > 1) main.focus({ preventScroll: true });
}

async function render() {
  const asked = ++routesAsked;
  if (!session.token) return show('Sign in', signInPage());
  nav.hidden = false;
  const { name, params } = routeOf(location.hash);
  for (const link of nav.querySelectorAll('a')) link.toggleAttribute('aria-current', link.getAttribute('href') === `#/${name}` || (name === 'object' && link.getAttribute('href') === '#/objects'));
  let page;
  try {
    page = await (PAGES[name] ?? PAGES.objects)();
  } catch (err) {
    return notify(`The page could not be loaded: ${err.message}`, true);
  }
  if (asked !== routesAsked) return;
  const { title, content, loaded } = page(params, render);
  // The first page is shown once what it loads is in (a page may say when: \`loaded\`): shown before, a
  // paint of it without its rows (its layout) came in the way of the list's answer (scripts/bench/console.ts).
  if (asked === 1 && loaded) await loaded;
  if (asked !== routesAsked) return;
  show(title, content);
}

/** Signs in and shows `route` (a hash such as `#/object?iri=…`): the page loads while the token is checked. */
async function signIn(token, route = '#/objects') {
  // Checked once the first page is shown: the sign-in page, when signing in on it.
  const checked = session.signIn(token, firstPage);
  if (location.hash === route) render();
  else location.hash = route;
  await checked;
  notify('Signed in.');
}

function signInPage() {
  nav.hidden = true;
  const failed = (err) => {
    render();
    notify(`Sign-in failed: ${err.message}`, true);
  };
  const clientId = h('input', { name: 'client_id', autocomplete: 'username', required: true });
  const secret = h('input', { name: 'client_secret', type: 'password', autocomplete: 'current-password', required: true });
  const token = h('textarea', { name: 'token', rows: 3, required: true, spellcheck: 'false' });
  const form = (id, legend, fields, submit) =>
    h('form', { id, onsubmit: (e) => { e.preventDefault(); submit().catch(failed); } }, h('fieldset', {}, h('legend', {}, legend), fields, h('button', { type: 'submit', class: 'primary' }, 'Sign in')));
  return [
    h('h1', {}, 'Sign in'),
    h('p', {}, 'The console calls this server\'s API with your token, so it shows what that token may see and nothing more.'),
    h('div', { class: 'columns' },
      form('client-sign-in', 'Client credentials (embedded identity provider)', [field('Client id', clientId), field('Client secret', secret)], async () => signIn(await clientToken(clientId.value.trim(), secret.value))),
      form('token-sign-in', 'Bearer token', [field('Token (e.g. from npx onerecord token)', token)], () => signIn(token.value.trim()))),
  ];
}

document.getElementById('sign-out').addEventListener('click', () => {
  session.signOut();
  location.hash = '#/objects';
  render();
});

// A sign-in link (start.js) signs in directly, on the route it names; the token leaves the address bar
// and history at once.
if (signInLink) {
  const { token, route } = signInLink;
  history.replaceState(null, '', `${location.pathname}${location.search}${route}`);
  signIn(token, route).catch((err) => {
    render();
    notify(`Sign-in failed: ${err.message}`, true);
  });
} else {
  // A kept token: the page loads while the token is checked again; an expired one signs out.
  render();
  session.resume(firstPage).then(
    () => session.token || render(),
    (err) => notify(err.message, true),
  );
}
window.addEventListener('hashchange', render);
