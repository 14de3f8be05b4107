// A node's properties as a readable table: nested nodes inline, Logistics Objects as links.
import { compareText, h } from './dom.js';
import { RDF_TYPE, shortIri, termView } from './rdf.js';

/** How deep nested nodes are drawn inline (the data holds no cycles, but a guard costs nothing). */
const MAX_DEPTH = 6;

/** The property/value table of `subject` in `graph`; predicates in `hide` are left out of its own rows (not of nested nodes'). */
export function propertiesTable(graph, subject, { hide = new Set(), depth = 0 } = {}) {
  const groups = new Map();
  for (const t of graph.about(subject)) {
    if (t.p.value === RDF_TYPE || hide.has(t.p.value)) continue;
    groups.set(t.p.value, [...(groups.get(t.p.value) ?? []), t.o]);
  }
  const types = graph.all(subject, RDF_TYPE).map((t) => shortIri(t.value));
  const rows = [...groups].sort(([a], [b]) => compareText(shortIri(a), shortIri(b)));
  return h('table', { class: 'properties' },
    types.length > 0 && h('caption', {}, types.join(', ')),
    h('tbody', {}, rows.map(([predicate, values]) =>
      h('tr', {},
        h('th', { scope: 'row', title: predicate }, shortIri(predicate)),
        h('td', {}, values.map((value) => h('div', { class: 'value' }, nestedOrTerm(graph, value, depth))))))));
}

/** A value that is itself described in the graph (an embedded node) is drawn as its own table. */
function nestedOrTerm(graph, term, depth) {
  const nested = term.kind !== 'literal' && graph.about(term.value).length > 0 && depth < MAX_DEPTH;
  return nested ? propertiesTable(graph, term.value, { depth: depth + 1 }) : termView(term);
}
