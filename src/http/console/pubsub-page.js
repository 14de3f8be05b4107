// Publish and subscribe: subscriptions both ways, delivery queues, dead letters (replay), received notifications.
import { getJson, query, request } from './api.js';
import { actionButton, field, h, loading, notify, table, time } from './dom.js';
import { propertiesTable } from './properties.js';
import { NS, getGraph, localName, objectLink, shortIri, termView } from './rdf.js';

const API = NS.api;
const NOTIFICATIONS_SHOWN = 100;
const EVENT_TYPES = ['LOGISTICS_OBJECT_CREATED', 'LOGISTICS_OBJECT_UPDATED', 'LOGISTICS_EVENT_RECEIVED', 'CHANGE_REQUEST_ACCEPTED', 'CHANGE_REQUEST_REJECTED', 'CHANGE_REQUEST_PENDING'];

const iriTerm = (iri) => (iri ? termView({ kind: 'iri', value: iri }) : '');

/** Subscribers of this server: its SubscriptionRequests (decided on the Requests page). */
async function subscribers() {
  const graph = await getGraph(`/action-requests${query({ type: 'SubscriptionRequest' })}`);
  const requests = graph.subjectsOfType(`${API}SubscriptionRequest`);
  if (requests.length === 0) return h('p', {}, 'No one has asked to subscribe.');
  return table(['Subscriber', 'Topic', 'Status', 'Asked'], requests.map((r) => {
    const subscription = graph.value(r, `${API}hasSubscription`);
    const topic = graph.value(subscription, `${API}hasTopic`) ?? '';
    return [iriTerm(graph.value(subscription, `${API}hasSubscriber`)), topic.includes('/logistics-objects/') ? objectLink(topic) : shortIri(topic), localName(graph.value(r, `${API}hasRequestStatus`) ?? ''), time(graph.value(r, `${API}isRequestedAt`))];
  }), { id: 'subscribers' });
}

/** This server's subscriptions at other servers. */
async function remoteSubscriptions() {
  const { subscriptions } = await getJson('/internal/remote-subscriptions');
  if (subscriptions.length === 0) return h('p', {}, 'This server subscribes to nothing elsewhere.');
  return table(['Publisher', 'Topic', 'Since', 'Request'], subscriptions.map((s) => [s.publisher, shortIri(s.topic), time(s.subscribedAt), h('code', { title: s.request }, localName(s.request))]), { id: 'remote-subscriptions' });
}

async function queues() {
  const { queues: list } = await getJson('/internal/outbox/queues');
  const depth = list.reduce((sum, q) => sum + q.pending, 0);
  return [
    h('p', { class: 'meta', id: 'outbox-depth' }, `${depth} notification${depth === 1 ? '' : 's'} waiting in ${list.length} queue${list.length === 1 ? '' : 's'}`),
    list.length > 0 && table(['Queue', 'Callback', 'Waiting', 'Attempts', 'Next attempt', 'Last error'], list.map((q) => [q.queue, q.callback, String(q.pending), String(q.attempts), time(q.nextAttemptAt), q.lastError ?? '']), { id: 'queues' }),
  ];
}

async function deadLetters(rerender) {
  const { deadLetters: list } = await getJson('/internal/outbox/dead-letters');
  if (list.length === 0) return h('p', { id: 'dead-letters' }, 'No dead letters.');
  const replay = (notifications) => async () => {
    const res = await request(`/internal/outbox/dead-letters/replay${notifications ? `?${notifications.map((n) => `notification=${encodeURIComponent(n)}`).join('&')}` : ''}`, { method: 'POST' });
    notify(`Replayed ${(await res.json()).replayed}.`);
    rerender();
  };
  return [
    table(['Notification', 'Event', 'Object', 'Callback', 'Given up', 'Reason', ''], list.map((d) => [
      h('code', { title: d.notification }, localName(d.notification)),
      localName(d.eventType),
      d.object ? iriTerm(d.object) : '',
      d.callback,
      time(d.deadLetteredAt),
      d.reason,
      actionButton('Replay', replay([d.notification]), { 'data-notification': d.notification }),
    ]), { id: 'dead-letters' }),
    actionButton(`Replay all ${list.length}`, replay(), { id: 'replay-all' }),
  ];
}

function notificationFilter(params) {
  const eventType = h('select', { name: 'event-type' }, h('option', { value: '' }, 'any event'), EVENT_TYPES.map((t) => h('option', { value: t, selected: t === params.get('event-type') }, t)));
  const sender = h('input', { name: 'sender', type: 'url', value: params.get('sender') ?? '' });
  const object = h('input', { name: 'logistics-object', type: 'url', value: params.get('logistics-object') ?? '' });
  const after = h('input', { name: 'received-after', type: 'datetime-local', value: params.get('received-after') ?? '' });
  const submit = (e) => {
    e.preventDefault();
    location.hash = `#/pubsub${query({ 'event-type': eventType.value, sender: sender.value.trim(), 'logistics-object': object.value.trim(), 'received-after': after.value })}`;
  };
  return h('form', { class: 'inline', id: 'notification-filter', onsubmit: submit }, field('Event', eventType), field('Sender', sender), field('Object', object), field('Received after', after), h('button', { type: 'submit' }, 'Filter'));
}

/**
 * The newest received notifications matching the filter (the API lists them in arrival order): the
 * notifications as received, beside the receipts this server noted (same filter, same page).
 */
async function notifications(params) {
  const after = params.get('received-after');
  const filter = { 'event-type': params.get('event-type'), sender: params.get('sender'), 'logistics-object': params.get('logistics-object'), 'received-after': after && new Date(after).toISOString() };
  const { total } = await getJson(`/internal/notifications/receipts${query({ ...filter, limit: 1 })}`);
  const page = query({ ...filter, skip: Math.max(0, total - NOTIFICATIONS_SHOWN), limit: NOTIFICATIONS_SHOWN });
  const [{ receipts }, graph] = await Promise.all([getJson(`/internal/notifications/receipts${page}`), getGraph(`/internal/notifications${page}`)]);
  const receiptOf = new Map(receipts.map((r) => [r.notification, r]));
  const items = graph.subjectsOfType(`${API}Notification`).reverse();
  return [
    h('p', { class: 'meta' }, `${total} received${total > NOTIFICATIONS_SHOWN ? `, the ${NOTIFICATIONS_SHOWN} newest shown` : ''}, newest first`),
    items.length > 0 && table(['#', 'Received', 'Sender', 'Notification', 'Event', 'Object', 'Changed', 'Details'], items.map((n) => {
      // A notification that arrived between the two calls has no receipt here: shown, its receipt blank.
      const receipt = receiptOf.get(n);
      return [
        receipt ? String(receipt.sequence) : '',
        time(receipt?.receivedAt),
        iriTerm(receipt?.sender),
        h('code', { title: n }, localName(n)),
        localName(graph.value(n, `${API}hasEventType`) ?? ''),
        iriTerm(graph.value(n, `${API}hasLogisticsObject`)),
        graph.all(n, `${API}hasChangedProperty`).map((t) => shortIri(t.value)).join(', '),
        h('details', {}, h('summary', {}, 'All'), propertiesTable(graph, n)),
      ];
    }), { id: 'notifications' }),
  ];
}

export function pubsubPage(params, rerender) {
  return {
    title: 'Publish and subscribe',
    content: [
      h('h1', {}, 'Publish and subscribe'),
      h('h2', {}, 'Subscribers of this server'), loading(subscribers),
      h('h2', {}, 'Subscriptions of this server elsewhere'), loading(remoteSubscriptions),
      h('h2', {}, 'Delivery queues'), loading(queues),
      h('h2', {}, 'Dead letters'), loading(() => deadLetters(rerender)),
      h('h2', {}, 'Received notifications'), notificationFilter(params), loading(() => notifications(params)),
    ],
  };
}
