// Action requests: pending ones first; a change shown as a diff against the revision it targets; accept, reject, revoke.
import { query } from './api.js';
import { field, h, loading } from './dom.js';
import { getGraph } from './rdf.js';
import { requestCard, requestIris } from './request-card.js';

const STATUSES = ['REQUEST_PENDING', 'REQUEST_ACCEPTED', 'REQUEST_REJECTED', 'REQUEST_REVOKED', 'REQUEST_FAILED'];
const TYPES = ['ChangeRequest', 'AccessDelegationRequest', 'SubscriptionRequest'];

const select = (name, options, value, anyLabel) =>
  h('select', { name }, h('option', { value: '' }, anyLabel), options.map((o) => h('option', { value: o, selected: o === value }, o.replace('REQUEST_', '').toLowerCase())));

function filterForm(status, type) {
  const statusSelect = select('status', STATUSES, status, 'any status');
  const typeSelect = select('type', TYPES, type, 'any type');
  const submit = (e) => {
    e.preventDefault();
    location.hash = `#/requests${query({ status: statusSelect.value || 'any', type: typeSelect.value })}`;
  };
  return h('form', { class: 'inline', id: 'request-filter', onsubmit: submit }, field('Status', statusSelect), field('Type', typeSelect), h('button', { type: 'submit' }, 'Filter'));
}

async function requestList(status, type, rerender) {
  const graph = await getGraph(`/action-requests${query({ status, type })}`);
  const iris = requestIris(graph);
  if (iris.length === 0) return h('p', {}, 'No action requests match.');
  return h('div', { class: 'cards', id: 'request-list' }, iris.map((iri) => requestCard(graph, iri, rerender)));
}

export function requestsPage(params, rerender) {
  // Pending unless the reader asked for another status or for any (status=any).
  const status = params.get('status') === 'any' ? '' : params.get('status') ?? 'REQUEST_PENDING';
  const type = params.get('type') ?? '';
  return {
    title: 'Action requests',
    content: [
      h('h1', {}, 'Action requests'),
      h('p', {}, 'Change, access-delegation and subscription requests of every object (internal actors). A requester finds its own in the audit trail of the object.'),
      filterForm(status, type),
      loading(() => requestList(status, type, rerender)),
    ],
  };
}
