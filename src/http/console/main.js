// Start-up: sign-in (client credentials, a pasted token, or #token=), then the hash routes.
import { clientToken, session } from './api.js';
import { field, h, notify } from './dom.js';
import { healthPage } from './health-page.js';
import { objectListPage } from './object-list-page.js';
import { objectPage } from './object-page.js';
import { pubsubPage } from './pubsub-page.js';
import { requestsPage } from './requests-page.js';

const PAGES = { objects: objectListPage, object: objectPage, requests: requestsPage, pubsub: pubsubPage, health: healthPage };
const main = document.getElementById('main');
const nav = document.getElementById('nav');

/** `#/name?a=b` as a page name and its parameters. */
function currentRoute() {
  const [path, search = ''] = location.hash.replace(/^#\/?/, '').split('?');
  return { name: path || 'objects', params: new URLSearchParams(search) };
}

function show(title, content) {
  document.title = `${title} - ONE Record console`;
  main.replaceChildren(...[content].flat(Infinity).filter(Boolean));
  main.focus({ preventScroll: true });
}

function render() {
  if (!session.token) return show('Sign in', signInPage());
  nav.hidden = false;
  const { name, params } = currentRoute();
  const page = PAGES[name] ?? objectListPage;
  for (const link of nav.querySelectorAll('a')) link.toggleAttribute('aria-current', link.getAttribute('href') === `#/${name}` || (name === 'object' && link.getAttribute('href') === '#/objects'));
  const { title, content } = page(params, render);
  show(title, content);
}

/** Signs in and shows `route` (a hash such as `#/object?iri=…`): the page loads while the token is checked. */
async function signIn(token, route = '#/objects') {
  const checked = session.signIn(token);
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

// A link `console#token=<bearer>` signs in directly, `console#token=<bearer>&open=/object?iri=…` on
// that page (any route of the console after `open=`, as it is written after `#`); the token leaves the
// address bar and history at once.
const link = /^#token=([^&]+)(?:&open=(\/.*))?$/.exec(location.hash);
if (link) {
  const route = `#${link[2] ?? '/objects'}`;
  history.replaceState(null, '', `${location.pathname}${location.search}${route}`);
  signIn(decodeURIComponent(link[1]), route).catch((err) => {
    render();
    notify(`Sign-in failed: ${err.message}`, true);
  });
} else {
  // A kept token: the page loads while the token is checked again; an expired one signs out.
  render();
  session.resume().then(
    () => session.token || render(),
    (err) => notify(err.message, true),
  );
}
window.addEventListener('hashchange', render);
