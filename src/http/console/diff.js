// Differences between two sets of triples (two revisions, or a revision and a requested change), side by side.
import { compareText, h } from './dom.js';
import { Graph, NS, shortIri, termView, tripleKey } from './rdf.js';

/** Bookkeeping every revision carries: differs between any two, says nothing about the change. */
const BOOKKEEPING = new Set([`${NS.api}hasRevision`, `${NS.api}hasLatestRevision`]);

/** The triples of `after` that `before` lacks (added) and those it dropped (removed). */
export function diffTriples(before, after) {
  const content = (triples) => triples.filter((t) => !BOOKKEEPING.has(t.p.value));
  const beforeKeys = new Set(content(before).map(tripleKey));
  const afterKeys = new Set(content(after).map(tripleKey));
  return {
    added: content(after).filter((t) => !beforeKeys.has(tripleKey(t))),
    removed: content(before).filter((t) => !afterKeys.has(tripleKey(t))),
  };
}

/** Where a subject sits: the object itself, or the property path from it to a nested node. */
function subjectLabel(graphs, subject, root) {
  const path = [];
  for (let node = subject, depth = 0; node !== root && depth < 8; depth++) {
    const parent = graphs.map((g) => g.parentOf(node)).find(Boolean);
    if (!parent) return shortIri(subject);
    path.unshift(shortIri(parent.p.value));
    node = parent.s.value;
  }
  return path.join(' › ');
}

/**
 * The changed properties of `before` and `after` (arrays of triples) as a table: one row per
 * subject and property that changed, the old values on the left (removed ones marked), the new on
 * the right (added ones marked). `root` is the Logistics Object the triples describe.
 */
export function sideBySide(before, after, { root, beforeTitle, afterTitle }) {
  const { added, removed } = diffTriples(before, after);
  if (added.length === 0 && removed.length === 0) return h('p', { class: 'diff-empty' }, 'No difference.');
  const graphs = [new Graph(after), new Graph(before)];
  const removedKeys = new Set(removed.map(tripleKey));
  const addedKeys = new Set(added.map(tripleKey));
  const rows = new Map();
  for (const t of [...removed, ...added]) rows.set(`${t.s.value} ${t.p.value}`, { s: t.s.value, p: t.p.value });
  const valuesOf = (triples, row, marked, mark) =>
    triples
      .filter((t) => t.s.value === row.s && t.p.value === row.p)
      .map((t) => h('div', { class: marked.has(tripleKey(t)) ? mark : 'same' }, h('span', { class: 'sign', 'aria-label': marked.has(tripleKey(t)) ? mark : 'unchanged' }, marked.has(tripleKey(t)) ? (mark === 'added' ? '+' : '−') : ' '), termView(t.o)));
  const ordered = [...rows.values()].sort((a, b) => (a.s === root ? -1 : b.s === root ? 1 : compareText(a.s, b.s)) || compareText(a.p, b.p));
  return h('div', { class: 'table-box' },
    h('table', { class: 'diff', 'data-added': added.length, 'data-removed': removed.length },
      h('caption', {}, `${added.length} added, ${removed.length} removed`),
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Property'), h('th', { scope: 'col' }, beforeTitle), h('th', { scope: 'col' }, afterTitle))),
      h('tbody', {}, ordered.map((row) => {
        const where = row.s === root ? '' : `${subjectLabel(graphs, row.s, root)} › `;
        return h('tr', {},
          h('th', { scope: 'row', title: row.p }, where + shortIri(row.p)),
          h('td', {}, valuesOf(before, row, removedKeys, 'removed')),
          h('td', {}, valuesOf(after, row, addedKeys, 'added')));
      }))));
}
