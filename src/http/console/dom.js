// Building the page: every value goes in as text or as an attribute, never as markup.

/**
 * An element: `props` are attributes, `on<event>` listeners, `class`/`for` as in HTML; children
 * are nodes, strings, numbers or arrays of them (null, undefined and false are left out).
 */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on') && typeof value === 'function') el.addEventListener(name.slice(2), value);
    else if (value === true) el.setAttribute(name, '');
    else el.setAttribute(name, String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : String(child));
  }
}

/**
 * A table with a header row; `rows` are arrays of cells (nodes or text). On a narrow screen each
 * row becomes a block of labelled lines (console.css), so the page never scrolls sideways.
 */
export function table(headers, rows, props = {}) {
  return h('div', { class: 'table-box' },
    h('table', { class: 'stack', ...props },
      h('thead', {}, h('tr', {}, headers.map((title) => h('th', { scope: 'col' }, title)))),
      h('tbody', {}, rows.map((cells) => h('tr', {}, cells.map((cell, i) => h('td', { 'data-label': headers[i] }, cell)))))));
}

/** A labelled form field. */
export function field(label, control) {
  return h('label', { class: 'field' }, h('span', {}, label), control);
}

/** A button that runs `action` once per click, disabled while it runs, reporting failures. */
export function actionButton(label, action, props = {}) {
  const button = h('button', { type: 'button', ...props }, label);
  button.addEventListener('click', async () => {
    button.disabled = true;
    try {
      await action();
    } catch (err) {
      notify(err.message ?? String(err), true);
    } finally {
      button.disabled = false;
    }
  });
  return button;
}

/** How long a message stays; errors stay until the next message. */
const NOTICE_MS = 6000;

/** A short message in the live region (read out by screen readers). */
export function notify(message, isError = false) {
  const toast = document.getElementById('toast');
  toast.className = isError ? 'error' : '';
  toast.textContent = message;
  if (!isError) setTimeout(() => toast.textContent === message && (toast.textContent = ''), NOTICE_MS);
}

/** Settles once the page as it is now has been painted: for work that may come a frame after the rest. */
export function afterNextPaint() {
  // A frame's callbacks run just before its paint; a task queued from one runs after it.
  return new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve)));
}

/** Content that loads: a placeholder until `load` resolves, then its nodes, or the error. */
export function loading(load) {
  const box = h('div', { class: 'loading', 'aria-busy': 'true' }, 'Loading…');
  load().then(
    (content) => {
      box.removeAttribute('aria-busy');
      box.className = '';
      box.replaceChildren(...[content].flat(Infinity).filter(Boolean));
    },
    (err) => {
      box.removeAttribute('aria-busy');
      box.className = 'error';
      box.textContent = err.message ?? String(err);
    },
  );
  return box;
}

/*
 * Dates and sorting without the locale's rules (toLocaleString, localeCompare): their first use in a
 * page loads ICU data, 10-30 ms each, which the landing page would wait for (scripts/bench/console.ts).
 * What the console sorts is IRIs and ISO dates, whose code-unit order is the right one.
 */

const twoDigits = (n) => String(n).padStart(2, '0');

/** A date-time in the reader's time zone, as YYYY-MM-DD hh:mm:ss, with the exact instant as a tooltip. */
export function time(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  const local = `${d.getFullYear()}-${twoDigits(d.getMonth() + 1)}-${twoDigits(d.getDate())} ${twoDigits(d.getHours())}:${twoDigits(d.getMinutes())}:${twoDigits(d.getSeconds())}`;
  return h('time', { datetime: d.toISOString(), title: d.toISOString() }, local);
}

/** Compares by code units (a sort's comparator). */
export const compareText = (a, b) => (a < b ? -1 : a > b ? 1 : 0);
