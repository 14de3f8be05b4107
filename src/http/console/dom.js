// Building the page: every value goes in as text or as an attribute, never as markup.

const MARKUP_ESCAPES = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Markup made by `html`: the only value `html` writes as it is. */
class Markup {
  constructor(text) {
    this.text = text;
  }
}

const markupOf = (value) =>
  value instanceof Markup ? value.text
  : Array.isArray(value) ? value.map(markupOf).join('')
  : value === undefined || value === null || value === false ? ''
  : String(value).replace(/[&<>"']/g, (c) => MARKUP_ESCAPES[c]);

/**
 * Markup from a template literal, for many elements at once: each value written as escaped text (the
 * templates quote every attribute value), arrays one after the other (null, undefined and false left
 * out), and only markup made here as it is; far quicker for the browser than building element by
 * element (scripts/bench/console.ts). Attributes only: listeners are added to the nodes afterwards
 * (the content security policy refuses inline handlers anyway).
 */
export function html(strings, ...values) {
  return new Markup(strings.reduce((text, string, i) => text + markupOf(values[i - 1]) + string));
}

/** The nodes of `markup` (from `html`), as a fragment. */
export function nodes(markup) {
  const template = document.createElement('template');
  template.innerHTML = markup.text;
  return template.content;
}

/** The one element `markup` makes. */
export const elementOf = (markup) => nodes(markup).firstElementChild;

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
 * A table's markup, with a header row; `rows` are arrays of cells (markup or text). On a narrow screen
 * each row becomes a block of labelled lines (console.css), so the page never scrolls sideways.
 */
export function tableHtml(headers, rows, { id } = {}) {
  return html`<div class="table-box"><table class="stack"${id ? html` id="${id}"` : ''}><thead><tr>${headers.map((title) => html`<th scope="col">${title}</th>`)}</tr></thead><tbody>${rows.map((cells) => html`<tr>${cells.map((cell, i) => html`<td data-label="${headers[i]}">${cell}</td>`)}</tr>`)}</tbody></table></div>`;
}

/** The same table, whose cells are nodes or text (or arrays of them). */
export function table(headers, rows, props = {}) {
  const box = elementOf(tableHtml(headers, rows.map((cells) => cells.map(() => '')), props));
  const cells = box.querySelectorAll('td');
  rows.flat(1).forEach((cell, i) => append(cells[i], [cell]));
  return box;
}

/** A labelled form field's markup, around the control's. */
export const fieldHtml = (label, control) => html`<label class="field"><span>${label}</span>${control}</label>`;

/** A labelled form field. */
export function field(label, control) {
  const box = elementOf(fieldHtml(label, ''));
  box.append(control);
  return box;
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
 * page loads ICU data, which the landing page would wait for (scripts/bench/console.ts). What the
 * console sorts is IRIs and ISO dates, whose code-unit order is the right one.
 */

const twoDigits = (n) => String(n).padStart(2, '0');

/** A date-time in the reader's time zone, as YYYY-MM-DD hh:mm:ss, with the exact instant as a tooltip (markup). */
export function timeHtml(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  const local = `${d.getFullYear()}-${twoDigits(d.getMonth() + 1)}-${twoDigits(d.getDate())} ${twoDigits(d.getHours())}:${twoDigits(d.getMinutes())}:${twoDigits(d.getSeconds())}`;
  return html`<time datetime="${d.toISOString()}" title="${d.toISOString()}">${local}</time>`;
}

/** The same date-time, an element. */
export const time = (iso) => (iso ? elementOf(timeHtml(iso)) : '');

/** Compares by code units (a sort's comparator). */
export const compareText = (a, b) => (a < b ? -1 : a > b ? 1 : 0);
