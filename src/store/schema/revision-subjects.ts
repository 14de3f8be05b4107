import { namedNode, quad, type Quad, type Term } from '../../rdf/terms.js';
import { INTERNAL_SCHEME } from '../../rdf/vocab.js';
import { revisionOfGraph } from './revisions.js';

/*
 * In a SPARQL engine a revision's graph names the object's embedded nodes as its own (docs/sparql-engine.md,
 * "Layout"): in the graph of revision n, `{object}?revision={n}`, every `internal:` IRI (the embedded nodes' ids the
 * server gives), as subject or object, is written `{iri}?revision={n}`. Virtuoso numbers an IRI when it first meets it
 * and orders its indexes by those numbers: under fresh subjects, a revision's quads go where the newest quads are,
 * instead of beside the object's own on pages that a change to one of a million objects otherwise reads and writes for
 * them alone ("Write cost"). The object and every other IRI keep theirs, so a query of the revisions view asks for
 * the object as in any graph. Every `internal:` IRI gets the suffix, so taking one suffix off each gives back what was
 * written; a graph of an earlier layout has none and reads as it is.
 */

/** The suffix of revision graph `graph`'s embedded nodes; undefined for any other graph. */
const suffixOf = (graph: string) =>
  revisionOfGraph(graph) === undefined ? undefined : graph.slice(graph.lastIndexOf('?revision='));

/** `triples` with each IRI that `map` gives another; undefined when it gives none. */
function mapped(triples: readonly Quad[], map: (iri: string) => string | undefined): Quad[] | undefined {
  const terms = new Map<string, Term>();
  let changed = false;
  const term = <T extends Term>(t: T): T => {
    if (t.termType !== 'NamedNode') return t;
    let found = terms.get(t.value);
    if (!found) {
      const to = map(t.value);
      found = to === undefined ? t : namedNode(to);
      changed ||= to !== undefined;
      terms.set(t.value, found);
    }
    return found as T;
  };
  const out = triples.map((t) => {
    const [subject, object] = [term(t.subject), term(t.object)];
    return subject === t.subject && object === t.object ? t : quad(subject, t.predicate, object);
  });
  return changed ? out : undefined;
}

/** The triples of revision graph `graph` as an engine keeps them. */
export function toRevisionSubjects(triples: readonly Quad[], graph: string): readonly Quad[] {
  const suffix = suffixOf(graph);
  if (suffix === undefined) return triples;
  return mapped(triples, (iri) => (iri.startsWith(INTERNAL_SCHEME) ? iri + suffix : undefined)) ?? triples;
}

/** The triples of `graph` as the domain wrote them (`toRevisionSubjects` undone); any other graph's as they are. */
export function fromRevisionSubjects(triples: Quad[], graph: string): Quad[] {
  const suffix = suffixOf(graph);
  if (suffix === undefined) return triples;
  const undone = (iri: string) =>
    iri.startsWith(INTERNAL_SCHEME) && iri.endsWith(suffix) ? iri.slice(0, -suffix.length) : undefined;
  return mapped(triples, undone) ?? triples;
}
