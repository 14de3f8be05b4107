// Who may read or change an object: its grants (grant, withdraw) and the explain-access answer drawn as the grant and delegation tree.
import { getJson, postJsonLd, query, request } from './api.js';
import { actionButton, field, h, loading, notify, table, time } from './dom.js';
import { NS, getGraph, localName, termView } from './rdf.js';

const ACL = NS.acl;
const STORE = NS.store;
/** Each permission as the grant that gives it: a mode on the object or on its events. */
const PERMISSIONS = [
  { name: 'GET_LOGISTICS_OBJECT', mode: 'Read', onEvents: false },
  { name: 'PATCH_LOGISTICS_OBJECT', mode: 'Write', onEvents: false },
  { name: 'GET_LOGISTICS_EVENT', mode: 'Read', onEvents: true },
  { name: 'POST_LOGISTICS_EVENT', mode: 'Append', onEvents: true },
];
/** Explanations drawn at once, one per agent holding a grant. */
const AGENTS_EXPLAINED = 20;

const agentTerm = (iri) => termView({ kind: 'iri', value: iri });

/** One source of a permission; a grant shows the grants it was delegated from beneath it. */
function sourceNode(source) {
  if (source.source !== 'grant') return h('li', {}, source.source === 'creator' ? 'created the object' : 'internal actor');
  const delegation = source.delegation;
  return h('li', {},
    h('span', {}, 'grant ', h('code', { title: source.grant }, localName(source.grant)), ' to ', agentTerm(source.agent), ` (${source.permissions.join(', ')}), by `, agentTerm(source.grantedBy), ', ', time(source.grantedAt)),
    source.expiresAt && h('span', {}, ', expires ', time(source.expiresAt)),
    delegation && h('span', {}, ', from delegation request ', h('code', { title: delegation.request }, localName(delegation.request)), ` (${delegation.status}) asked by `, agentTerm(delegation.requestedBy)),
    source.derivedFrom.length > 0 && h('ul', {}, source.derivedFrom.map((parent) => sourceNode({ source: 'grant', ...parent }))));
}

/** The explain-access answer for one agent: each permission, held or not, with the tree of its sources. */
async function explanation(iri, agent) {
  const answer = await getJson(`/internal/access${query({ object: iri, agent })}`);
  return h('section', { class: 'card explain', 'data-agent': answer.agent },
    h('h3', {}, agentTerm(answer.agent), answer.internal ? ' (internal actor)' : '', answer.creator ? ' (creator)' : ''),
    h('ul', { class: 'tree' }, Object.entries(answer.permissions).map(([permission, { held, sources }]) =>
      h('li', { 'data-permission': permission, 'data-held': String(held) },
        h('span', { class: held ? 'held' : 'not-held' }, held ? '✓ ' : '✗ ', permission),
        sources.length > 0 && h('ul', {}, sources.map(sourceNode))))));
}

function grantForm(iri, changed) {
  const agent = h('input', { name: 'agent', type: 'url', required: true, placeholder: 'https://partner.example.com/logistics-objects/partner' });
  const boxes = PERMISSIONS.map((p) => h('input', { type: 'checkbox', name: 'permission', value: p.name, checked: p.name === 'GET_LOGISTICS_OBJECT' }));
  const submit = async (e) => {
    e.preventDefault();
    const wanted = PERMISSIONS.filter((_, i) => boxes[i].checked);
    // One acl:Authorization per kind of resource: the object's modes, then its events'.
    for (const onEvents of [false, true]) {
      const modes = wanted.filter((p) => p.onEvents === onEvents).map((p) => ({ '@id': `${ACL}${p.mode}` }));
      if (modes.length === 0) continue;
      await postJsonLd('/internal/acl', { '@type': `${ACL}Authorization`, [`${ACL}agent`]: { '@id': agent.value.trim() }, [`${ACL}accessTo`]: { '@id': onEvents ? `${iri}/logistics-events` : iri }, [`${ACL}mode`]: modes });
    }
    notify('Granted.');
    changed();
  };
  return h('form', { id: 'grant-form', class: 'card', onsubmit: (e) => submit(e).catch((err) => notify(err.message, true)) },
    h('h3', {}, 'Grant access'),
    field('Agent (Organization IRI)', agent),
    h('fieldset', { class: 'checks' }, h('legend', {}, 'Permissions'), PERMISSIONS.map((p, i) => h('label', {}, boxes[i], ' ', p.name))),
    h('button', { type: 'submit', class: 'primary' }, 'Grant'));
}

async function grants(iri, changed) {
  const graph = await getGraph(`/internal/acl${query({ object: iri })}`);
  const list = graph.subjectsOfType(`${ACL}Authorization`);
  const rows = list.map((grant) => [
    h('code', { title: grant }, localName(grant)),
    graph.all(grant, `${ACL}agent`).map((t) => agentTerm(t.value)).concat(graph.all(grant, `${ACL}agentClass`).map(() => 'any authenticated agent')),
    graph.all(grant, `${ACL}mode`).map((t) => localName(t.value)).join(', ') + (graph.all(grant, `${ACL}accessTo`).some((t) => t.value.endsWith('/logistics-events')) ? ' (events)' : ''),
    [agentTerm(graph.value(grant, `${STORE}grantedBy`) ?? ''), ', ', time(graph.value(grant, `${STORE}grantedAt`))],
    actionButton('Withdraw', async () => {
      await request(grant, { method: 'DELETE' });
      notify(`Withdrawn: ${localName(grant)}`);
      changed();
    }, { 'data-grant': grant }),
  ]);
  const agents = [...new Set(list.flatMap((g) => graph.all(g, `${ACL}agent`).map((t) => t.value)))];
  return [
    list.length > 0 ? table(['Grant', 'Agent', 'Modes', 'Granted', ''], rows, { id: 'grant-list' }) : h('p', { id: 'grant-list' }, 'No grants: internal actors and the creator only.'),
    h('h2', {}, 'Who holds what, and why'),
    agents.slice(0, AGENTS_EXPLAINED).map((agent) => loading(() => explanation(iri, agent))),
  ];
}

function explainForm(iri) {
  const agent = h('input', { name: 'agent', type: 'url', required: true });
  const result = h('div');
  const submit = (e) => {
    e.preventDefault();
    result.replaceChildren(loading(() => explanation(iri, agent.value.trim())));
  };
  return h('form', { id: 'explain-form', class: 'card', onsubmit: submit }, h('h3', {}, 'Explain access for an agent'), field('Agent', agent), h('button', { type: 'submit' }, 'Explain'), result);
}

/** The Access tab of an object (internal actors: the routes under /internal answer 403 to others). */
export function accessPanel(iri, changed) {
  return [h('h2', {}, 'Grants'), loading(() => grants(iri, changed)), h('div', { class: 'columns' }, grantForm(iri, changed), explainForm(iri))];
}
