// Health at a glance: what /health/ready says (store fill level), replica lag, outbox depth.
import { getJson, request } from './api.js';
import { h, loading, table } from './dom.js';

const GIB = 1024 ** 3;
const percent = (part, whole) => (whole > 0 ? Math.round((part / whole) * 1000) / 10 : 0);

/** A labelled fill level (a <meter> marks high and very high use). */
function gauge(label, used, capacity, format) {
  return h('div', { class: 'gauge' },
    h('span', {}, label),
    h('meter', { min: 0, max: capacity, value: used, low: capacity * 0.7, high: capacity * 0.9, optimum: 0, 'aria-label': label }),
    h('span', {}, `${format(used)} of ${format(capacity)} (${percent(used, capacity)} %)`));
}

async function store() {
  // /health/ready answers 503 while starting or stopping, still with a body worth showing.
  const res = await fetch(new URL('health/ready', new URL('.', location.href)));
  const ready = await res.json();
  const s = ready.store;
  return [
    h('p', { id: 'health-status', class: ready.status === 'ready' ? 'ok' : 'error' }, `Status: ${ready.status}`),
    s && gauge('Store (quads)', s.quads, s.capacityQuads, (n) => n.toLocaleString()),
    s && gauge('Index memory', s.wasmMemoryBytes, s.wasmMemoryLimitBytes - s.memoryReserveBytes, (n) => `${(n / GIB).toFixed(2)} GiB`),
    s?.writesRefused && h('p', { class: 'error' }, `Writes refused: ${s.writesRefused}`),
  ];
}

/** The SPARQL replica's lag, as the header of a trivial query says it. */
async function replica() {
  const res = await request('/sparql', { method: 'POST', contentType: 'application/sparql-query', accept: 'application/sparql-results+json', body: 'ASK {}' });
  const lag = res.headers.get('SPARQL-Replica-Lag') ?? 'unknown';
  return h('p', { id: 'replica-lag' }, lag === '0' ? 'Replica lag: none (holds every acknowledged write)' : `Replica lag: ${lag}`);
}

async function outbox() {
  const [{ queues }, { deadLetters }] = await Promise.all([getJson('/internal/outbox/queues'), getJson('/internal/outbox/dead-letters')]);
  const failing = queues.filter((q) => q.lastError);
  return [
    table(['Outbox', 'Count'], [['Notifications waiting', String(queues.reduce((sum, q) => sum + q.pending, 0))], ['Queues', String(queues.length)], ['Queues failing', String(failing.length)], ['Dead letters', String(deadLetters.length)]], { id: 'outbox-summary' }),
    h('p', {}, h('a', { href: '#/pubsub' }, 'Queues and dead letters')),
  ];
}

export function healthPage() {
  return {
    title: 'Health',
    content: [h('h1', {}, 'Health'), loading(store), h('h2', {}, 'SPARQL replica'), loading(replica), h('h2', {}, 'Notification outbox'), loading(outbox)],
  };
}
