// One action request (change, access delegation, subscription): what it asks, its status, and what the caller may do with it.
import { request } from './api.js';
import { actionButton, compareText, h, loading, notify, time } from './dom.js';
import { sideBySide } from './diff.js';
import { propertiesTable } from './properties.js';
import { NS, RDF_TYPE, getGraph, localName, objectLink, shortIri, termView, tripleKey } from './rdf.js';

const API = NS.api;
const PENDING = `${API}REQUEST_PENDING`;
/** Status bookkeeping shown in the card's header, not in its details. */
const HEADER_PROPERTIES = new Set([`${API}hasRequestStatus`, `${API}hasRequestStatusSince`, `${API}isRequestedBy`, `${API}isRequestedAt`, `${API}hasLogisticsObject`, `${API}hasChange`]);

/** An OperationObject's value as a term: a literal of an XSD datatype, else a node of the class it names. */
function operationValue(graph, node) {
  const value = graph.value(node, `${API}hasValue`) ?? '';
  const datatype = graph.value(node, `${API}hasDatatype`);
  return datatype?.startsWith(NS.xsd) ? { kind: 'literal', value, datatype } : { kind: 'iri', value };
}

/** The triples of the revision a Change targets, before and after its operations. */
async function changeDiff(graph, change) {
  const object = graph.value(change, `${API}hasLogisticsObject`);
  const revision = graph.value(change, `${API}hasRevision`);
  const target = await getGraph(`${object}?revision=${revision}`);
  const deleted = new Set();
  const added = [];
  for (const { value: op } of graph.all(change, `${API}hasOperation`)) {
    const s = { kind: 'iri', value: graph.value(op, `${API}s`) };
    const p = { kind: 'iri', value: graph.value(op, `${API}p`) };
    const isAdd = graph.value(op, `${API}op`) === `${API}ADD`;
    for (const { value: o } of graph.all(op, `${API}o`)) {
      const triple = { s, p, o: operationValue(graph, o) };
      if (isAdd) added.push(triple);
      else deleted.add(tripleKey(triple));
    }
  }
  const after = [...target.triples.filter((t) => !deleted.has(tripleKey(t))), ...added];
  const latest = target.value(object, `${API}hasLatestRevision`);
  return [
    latest !== revision && h('p', { class: 'warning' }, `It targets revision ${revision}; the object is now at revision ${latest}.`),
    sideBySide(target.triples, after, { root: object, beforeTitle: `Revision ${revision}`, afterTitle: 'With this change' }),
  ];
}

/** What the request asks: the change as a diff, or the delegation or subscription it carries. */
function details(graph, iri) {
  const change = graph.value(iri, `${API}hasChange`);
  if (change) return loading(() => changeDiff(graph, change));
  return propertiesTable(graph, iri, { hide: HEADER_PROPERTIES });
}

/**
 * A card for the action request `iri` described in `graph` (a list or audit trail read as
 * N-Triples). `changed` runs after an accept, reject or revoke succeeded.
 */
export function requestCard(graph, iri, changed) {
  const status = graph.value(iri, `${API}hasRequestStatus`) ?? '';
  const object = graph.value(iri, `${API}hasLogisticsObject`);
  const type = graph.all(iri, RDF_TYPE).map((t) => shortIri(t.value)).join(', ');
  const decide = (label, verb, statusName) =>
    actionButton(label, async () => {
      await request(`${iri}${statusName ? `?status=${statusName}` : ''}`, { method: verb });
      notify(`${label}: done (${localName(iri)})`);
      changed();
    }, { class: label === 'Accept' ? 'primary' : undefined, 'data-action': label.toLowerCase() });
  return h('article', { class: 'card request', 'data-request': iri, 'data-status': localName(status) },
    h('header', {},
      h('h3', {}, type, ' ', h('span', { class: `badge ${localName(status).toLowerCase()}` }, localName(status).replace('REQUEST_', ''))),
      h('p', { class: 'meta' },
        'by ', termView({ kind: 'iri', value: graph.value(iri, `${API}isRequestedBy`) ?? '' }),
        ', ', time(graph.value(iri, `${API}isRequestedAt`)),
        object && [' on ', objectLink(object)],
        h('br'), h('small', { class: 'iri' }, iri))),
    details(graph, iri),
    status === PENDING && h('div', { class: 'actions' }, decide('Accept', 'PATCH', 'REQUEST_ACCEPTED'), decide('Reject', 'PATCH', 'REQUEST_REJECTED'), decide('Revoke', 'DELETE')));
}

/** Every action request described in `graph`, newest first. */
export function requestIris(graph) {
  const types = ['ChangeRequest', 'AccessDelegationRequest', 'SubscriptionRequest', 'VerificationRequest'].map((t) => `${API}${t}`);
  return types
    .flatMap((t) => graph.subjectsOfType(t))
    .sort((a, b) => compareText(String(graph.value(b, `${API}isRequestedAt`)), String(graph.value(a, `${API}isRequestedAt`))));
}
