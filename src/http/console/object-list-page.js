// The landing page: Logistics Objects by type, by id, most recently changed first.
import { answerOf, getJson, query, session } from './api.js';
import { afterNextPaint, compareText, field, fieldHtml, h, html, loading, nodes, tableHtml, timeHtml } from './dom.js';
import { objectLinkHtml, shortIri, termViewHtml } from './rdf.js';

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

/** The filter form's markup. */
function filterFormHtml(params, types) {
  const typeOptions = Object.entries(types)
    .sort(([a], [b]) => compareText(shortIri(a), shortIri(b)))
    .map(([iri, count]) => html`<option value="${iri}"${iri === params.get('type') ? html` selected` : ''}>${shortIri(iri)} (${count})</option>`);
  // "Changed after" is a text field until the list is on screen (filterFormBehaviour).
  return html`<form class="inline" id="object-filter">${[
    fieldHtml('Type', html`<select name="type"><option value="">any type</option>${typeOptions}</select>`),
    fieldHtml('Id contains', html`<input name="id" type="search" value="${params.get('id') ?? ''}" placeholder="part of the IRI">`),
    fieldHtml('Changed after', html`<input name="changed-after" value="${params.get('changed-after') ?? ''}">`),
  ]}<button type="submit">Filter</button></form>`;
}

/** What the filter form does: a new list on submit; "Changed after" a date-time field from the next paint on. */
function filterFormBehaviour(form) {
  const { type, id, 'changed-after': changedAfter } = form.elements;
  // A text field until the list is on screen: making a date-time field loads the locale's date formats,
  // which the rows would wait for (scripts/bench/console.ts). Its value is already in the date-time
  // field's form (YYYY-MM-DDThh:mm), so it survives the change of type.
  afterNextPaint().then(() => (changedAfter.type = 'datetime-local'));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    location.hash = `#/objects${query({ type: type.value, id: id.value.trim(), 'changed-after': changedAfter.value })}`;
  });
}

/** The filter form, the list's page of objects as a table, and links to the pages before and after, as one markup. */
async function listing(params) {
  const skip = Number(params.get('skip') ?? 0);
  const list = await objectList(params);
  const rows = list.objects.map((o) => [objectLinkHtml(o.iri), shortIri(o.type), o.revision, timeHtml(o.changedAt), termViewHtml({ kind: 'iri', value: o.changedBy })]);
  const pageLink = (label, to) => {
    const next = new URLSearchParams(params);
    next.set('skip', String(to));
    return html`<a href="#/objects?${next}" class="button">${label}</a>`;
  };
  const content = nodes(html`${filterFormHtml(params, list.types)}
<p class="meta">${list.total} object${list.total === 1 ? '' : 's'}, most recently changed first</p>
${tableHtml(['Object', 'Type', 'Revision', 'Changed', 'By'], rows, { id: 'object-list' })}
<p class="pager">${skip > 0 && pageLink('Newer', Math.max(0, skip - PAGE_SIZE))}${skip + PAGE_SIZE < list.total && pageLink('Older', skip + PAGE_SIZE)}</p>`);
  filterFormBehaviour(content.getElementById('object-filter'));
  return content;
}

export function objectListPage(params) {
  const listed = listing(params);
  return {
    title: 'Logistics Objects',
    content: [h('h1', {}, 'Logistics Objects'), openByIri(), loading(() => listed)],
    // Settles once the list is in its box (or its error), for main.js, which shows the first page then.
    loaded: listed.catch(() => {}),
  };
}
