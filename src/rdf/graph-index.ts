import type { Quad, Term } from './terms.js';
import { groupBySubject, termKey } from './triples.js';
import { RDF } from './vocab.js';

/**
 * Every class a class is a subclass of (itself included), given each class's direct superclasses.
 * Memoised: class trees do not change once read.
 */
export function ancestorLookup(superClasses: ReadonlyMap<string, Iterable<string>>): (iri: string) => Set<string> {
  const cache = new Map<string, Set<string>>();
  return (iri) => {
    let found = cache.get(iri);
    if (found) return found;
    found = new Set([iri]);
    const todo = [iri];
    while (todo.length > 0) {
      for (const parent of superClasses.get(todo.pop()!) ?? []) {
        if (!found.has(parent)) {
          found.add(parent);
          todo.push(parent);
        }
      }
    }
    cache.set(iri, found);
    return found;
  };
}

/** Triples grouped by subject, for reading schema-like graphs (ontologies, shapes) node by node. */
export class GraphIndex {
  private readonly bySubject: Map<string, Quad[]>;

  constructor(readonly quads: readonly Quad[]) {
    this.bySubject = groupBySubject(quads);
  }

  triplesOf(subject: Term): readonly Quad[] {
    return this.bySubject.get(termKey(subject)) ?? [];
  }

  objects(subject: Term, predicate: string): Term[] {
    return this.triplesOf(subject)
      .filter((q) => q.predicate.value === predicate)
      .map((q) => q.object);
  }

  one(subject: Term, predicate: string): Term | undefined {
    return this.triplesOf(subject).find((q) => q.predicate.value === predicate)?.object;
  }

  /** The members of the RDF list starting at `head` (empty for rdf:nil or no list). */
  list(head: Term | undefined): Term[] {
    const items: Term[] = [];
    for (let node = head; node && node.value !== `${RDF}nil`; node = this.one(node, `${RDF}rest`)) {
      const first = this.one(node, `${RDF}first`);
      if (first) items.push(first);
    }
    return items;
  }

  subjectsOfType(type: string): Term[] {
    return this.quads
      .filter((q) => q.predicate.value === `${RDF}type` && q.object.value === type)
      .map((q) => q.subject);
  }
}
