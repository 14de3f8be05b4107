// The landing page: Logistics Objects by type, by id, most recently changed first.
import { answerOf, getJson, query, session } from './api.js';
import { afterNextPaint, compareText, field, h, loading, table, time } from './dom.js';
import { objectLink, shortIri, termView } from './rdf.js';

const { LIST_PAGE_SIZE: PAGE_SIZE, objectListPath, takeEarlyList } = window.consoleStart;

/** The object list for `params`: the one start.js asked for as the page opened when it is the same list, for the same token. */
async function objectList(params) {
  const path = objectListPath(params);
  const early = takeEarlyList(path, session.token);
  if (!early) return getJson(path);
  await answerOf(early.answer);
  return early.list;
}

/** Opens an object the caller knows by its IRI (partners, who may not list, open objects so). */
function openByIri() {
  const input = h('input', { name: 'iri', type: 'url', placeholder: 'https://…/logistics-objects/…', required: true });
  return h('form', { class: 'inline', id: 'open-object', onsubmit: (e) => { e.preventDefault(); location.hash = `#/object?iri=${encodeURIComponent(input.value.trim())}`; } },
    field('Open by IRI', input), h('button', { type: 'submit' }, 'Open'));
}

function filterForm(params, types) {
  const type = h('select', { name: 'type' }, h('option', { value: '' }, 'any type'),
    Object.entries(types).sort(([a], [b]) => compareText(shortIri(a), shortIri(b))).map(([iri, count]) => h('option', { value: iri, selected: iri === params.get('type') }, `${shortIri(iri)} (${count})`)));
  const id = h('input', { name: 'id', type: 'search', value: params.get('id') ?? '', placeholder: 'part of the IRI' });
  // A text field until the list is on screen: making a date-time field loads the locale's date formats,
  // 30-60 ms the first time in a page (scripts/bench/console.ts), which the rows would wait for. Its value
  // is already in the date-time field's form (YYYY-MM-DDThh:mm), so it survives the change of type.
  const changedAfter = h('input', { name: 'changed-after', value: params.get('changed-after') ?? '' });
  afterNextPaint().then(() => (changedAfter.type = 'datetime-local'));
  const submit = (e) => {
    e.preventDefault();
    location.hash = `#/objects${query({ type: type.value, id: id.value.trim(), 'changed-after': changedAfter.value })}`;
  };
  return h('form', { class: 'inline', id: 'object-filter', onsubmit: submit }, field('Type', type), field('Id contains', id), field('Changed after', changedAfter), h('button', { type: 'submit' }, 'Filter'));
}

async function listing(params) {
  const skip = Number(params.get('skip') ?? 0);
  const list = await objectList(params);
  const rows = list.objects.map((o) => [objectLink(o.iri), shortIri(o.type), String(o.revision), time(o.changedAt), termView({ kind: 'iri', value: o.changedBy })]);
  const pageLink = (label, to) => {
    const next = new URLSearchParams(params);
    next.set('skip', String(to));
    return h('a', { href: `#/objects?${next}`, class: 'button' }, label);
  };
  return [
    filterForm(params, list.types),
    h('p', { class: 'meta' }, `${list.total} object${list.total === 1 ? '' : 's'}, most recently changed first`),
    table(['Object', 'Type', 'Revision', 'Changed', 'By'], rows, { id: 'object-list' }),
    h('p', { class: 'pager' }, skip > 0 && pageLink('Newer', Math.max(0, skip - PAGE_SIZE)), skip + PAGE_SIZE < list.total && pageLink('Older', skip + PAGE_SIZE)),
  ];
}

export function objectListPage(params) {
  return {
    title: 'Logistics Objects',
    content: [h('h1', {}, 'Logistics Objects'), openByIri(), loading(() => listing(params))],
  };
}
