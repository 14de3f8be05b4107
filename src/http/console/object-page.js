// One Logistics Object: properties (at a revision or a past time), revisions and their diff, Turtle and JSON-LD, events, audit trail, access.
import { query, request } from './api.js';
import { accessPanel } from './access-panel.js';
import { compareText, field, h, loading, table, time } from './dom.js';
import { sideBySide } from './diff.js';
import { propertiesTable } from './properties.js';
import { Graph, NS, getGraph, localName, parseNTriples, shortIri } from './rdf.js';
import { requestCard, requestIris } from './request-card.js';

const TABS = { properties: 'Properties', revisions: 'Revisions', turtle: 'Turtle', jsonld: 'JSON-LD', events: 'Events', audit: 'Audit trail', access: 'Access' };
const REVISION_BOOKKEEPING = new Set([`${NS.api}hasRevision`, `${NS.api}hasLatestRevision`]);
/** Revisions listed at once (newest first); older ones are still reached by number. */
const REVISIONS_LISTED = 100;

/** `at` from a datetime-local field (the reader's time zone) as the instant the API takes. */
const atInstant = (local) => (local ? new Date(local).toISOString() : undefined);

/** The object's URL with the revision or instant the page shows. */
const selected = (iri, params) => `${iri}${query({ revision: params.get('revision'), at: atInstant(params.get('at')) })}`;

const tabHref = (iri, tab, extra = {}) => `#/object${query({ iri, tab, ...extra })}`;

/** Picks a revision or a past time; empty fields show the latest. */
function revisionForm(iri, params) {
  const revision = h('input', { name: 'revision', type: 'number', min: 1, value: params.get('revision') ?? '', inputmode: 'numeric' });
  const at = h('input', { name: 'at', type: 'datetime-local', step: 1, value: params.get('at') ?? '' });
  const submit = (e) => {
    e.preventDefault();
    location.hash = tabHref(iri, params.get('tab') ?? 'properties', { revision: revision.value, at: revision.value ? '' : at.value });
  };
  return h('form', { class: 'inline', id: 'revision-form', onsubmit: submit }, field('Revision', revision), field('or at', at), h('button', { type: 'submit' }, 'Show'));
}

async function properties(iri, params) {
  const res = await request(selected(iri, params), { accept: 'application/n-triples' });
  const graph = new Graph(parseNTriples(await res.text()));
  return [
    h('p', { class: 'meta', id: 'revision-info' }, `Revision ${res.headers.get('Revision')} of ${res.headers.get('Latest-Revision')}, written `, time(res.headers.get('Last-Modified'))),
    h('div', { class: 'table-box' }, propertiesTable(graph, iri, { hide: REVISION_BOOKKEEPING })),
  ];
}

async function serialisation(iri, params, accept) {
  const text = await (await request(selected(iri, params), { accept })).text();
  return h('pre', { class: 'source', tabindex: 0 }, accept === 'application/ld+json' ? JSON.stringify(JSON.parse(text), null, 2) : text);
}

/** Two revisions side by side: the triples added and removed from `a` to `b`. */
async function revisionDiff(iri, a, b) {
  const [before, after] = await Promise.all([getGraph(`${iri}?revision=${a}`), getGraph(`${iri}?revision=${b}`)]);
  return sideBySide(before.triples, after.triples, { root: iri, beforeTitle: `Revision ${a}`, afterTitle: `Revision ${b}` });
}

async function revisions(iri, params) {
  const latest = Number((await request(iri, { method: 'HEAD' })).headers.get('Latest-Revision'));
  const numbers = Array.from({ length: Math.min(latest, REVISIONS_LISTED) }, (_, i) => latest - i);
  const written = await Promise.all(numbers.map(async (n) => (await request(`${iri}?revision=${n}`, { method: 'HEAD' })).headers.get('Last-Modified')));
  const a = Number(params.get('a') ?? Math.max(1, latest - 1));
  const b = Number(params.get('b') ?? latest);
  const radio = (name, n, checked) => h('input', { type: 'radio', name, value: n, checked, 'aria-label': `${name === 'a' ? 'from' : 'to'} revision ${n}` });
  const rows = numbers.map((n, i) => [radio('a', n, n === a), radio('b', n, n === b), h('a', { href: tabHref(iri, 'properties', { revision: n }) }, `Revision ${n}`), time(written[i])]);
  const compare = (e) => {
    e.preventDefault();
    const form = new FormData(e.target);
    location.hash = tabHref(iri, 'revisions', { a: form.get('a'), b: form.get('b') });
  };
  return [
    h('form', { id: 'revisions-form', onsubmit: compare },
      table(['From', 'To', 'Revision', 'Written'], rows, { id: 'revision-list' }),
      h('button', { type: 'submit', class: 'primary' }, 'Compare')),
    latest > REVISIONS_LISTED && h('p', { class: 'meta' }, `The ${REVISIONS_LISTED} newest of ${latest} revisions; older ones: Properties, by number.`),
    h('h2', {}, `Revision ${a} → ${b}`),
    a !== b ? loading(() => revisionDiff(iri, a, b)) : h('p', {}, 'Pick two different revisions.'),
  ];
}

async function events(iri) {
  const graph = await getGraph(`${iri}/logistics-events?sort=DESC-eventDate&limit=1000`);
  const items = graph.triples.filter((t) => t.p.value === `${NS.api}hasItem`).map((t) => t.o.value);
  if (items.length === 0) return h('p', {}, 'No Logistics Events.');
  const when = (e) => graph.value(e, `${NS.cargo}eventDate`) ?? graph.value(e, `${NS.cargo}creationDate`) ?? '';
  items.sort((x, y) => compareText(when(y), when(x)));
  return h('ol', { class: 'timeline', id: 'event-timeline' }, items.map((e) => {
    const code = graph.value(e, `${NS.cargo}eventCode`);
    return h('li', {},
      h('p', { class: 'when' }, time(when(e))),
      h('p', { class: 'what' }, h('strong', {}, code ? localName(code) : 'Event'), ' ', graph.value(e, `${NS.cargo}eventName`) ?? ''),
      h('details', {}, h('summary', {}, 'Details'), h('div', { class: 'table-box' }, propertiesTable(graph, e, { hide: new Set([`${NS.cargo}eventFor`]) }))));
  }));
}

async function auditTrail(iri, rerender) {
  const graph = await getGraph(`${iri}/audit-trail`);
  const requests = requestIris(graph);
  if (requests.length === 0) return h('p', {}, 'No action requests.');
  return h('div', { class: 'cards', id: 'audit-trail' }, requests.map((r) => requestCard(graph, r, rerender)));
}

function tabContent(iri, tab, params, rerender) {
  switch (tab) {
    case 'revisions': return loading(() => revisions(iri, params));
    case 'turtle': return [revisionForm(iri, params), loading(() => serialisation(iri, params, 'text/turtle'))];
    case 'jsonld': return [revisionForm(iri, params), loading(() => serialisation(iri, params, 'application/ld+json'))];
    case 'events': return loading(() => events(iri));
    case 'audit': return loading(() => auditTrail(iri, rerender));
    case 'access': return accessPanel(iri, rerender);
    default: return [revisionForm(iri, params), loading(() => properties(iri, params))];
  }
}

export function objectPage(params, rerender) {
  const iri = params.get('iri') ?? '';
  const tab = TABS[params.get('tab')] ? params.get('tab') : 'properties';
  return {
    title: `${localName(iri)} (${TABS[tab]})`,
    content: [
      h('h1', { class: 'object-title' }, localName(iri), h('small', { class: 'iri' }, iri)),
      loading(async () => h('p', { class: 'meta' }, shortIri((await request(iri, { method: 'HEAD' })).headers.get('Type') ?? ''))),
      h('nav', { class: 'tabs', 'aria-label': 'Object views' },
        Object.entries(TABS).map(([name, label]) => h('a', { href: tabHref(iri, name), 'aria-current': name === tab ? 'page' : undefined }, label))),
      h('section', { id: `tab-${tab}`, class: 'tab' }, tabContent(iri, tab, params, rerender)),
    ],
  };
}
