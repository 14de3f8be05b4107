import { readFileSync } from 'node:fs';
import { Parser } from 'n3';
import { ancestorLookup } from './graph-index.js';
import { cargo, owl, rdf, rdfs } from './vocab.js';

/**
 * What the server needs from the cargo ontology: which classes exist and how they nest.
 * Read from the official Turtle file under ontology/, never from a hand-made list.
 */
export class CargoOntology {
  private readonly classes = new Set<string>();
  private readonly superClasses = new Map<string, Set<string>>();

  constructor(turtle: string) {
    for (const q of new Parser().parse(turtle)) {
      if (q.subject.termType !== 'NamedNode') continue;
      if (q.predicate.value === rdf.type && q.object.value === owl.Class) this.classes.add(q.subject.value);
      if (q.predicate.value === rdfs.subClassOf && q.object.termType === 'NamedNode') {
        const set = this.superClasses.get(q.subject.value) ?? new Set<string>();
        set.add(q.object.value);
        this.superClasses.set(q.subject.value, set);
      }
    }
  }

  static fromFile(path: string): CargoOntology {
    return new CargoOntology(readFileSync(path, 'utf8'));
  }

  /** Every class `iri` is a subclass of, itself included. */
  private readonly ancestors = ancestorLookup(this.superClasses);

  isClass(iri: string): boolean {
    return this.classes.has(iri);
  }

  isSubClassOf(iri: string, ancestor: string): boolean {
    return this.classes.has(iri) && this.ancestors(iri).has(ancestor);
  }

  isLogisticsObjectClass(iri: string): boolean {
    return this.isSubClassOf(iri, cargo.LogisticsObject);
  }

  isLogisticsEventClass(iri: string): boolean {
    return this.isSubClassOf(iri, cargo.LogisticsEvent);
  }

  /** The types of `types` that no other of them specialises, in input order (Company over Organization). */
  mostSpecific(types: readonly string[]): string[] {
    const known = types.filter((t) => this.classes.has(t));
    const candidates = known.length > 0 ? known : [...types];
    return candidates.filter((t) => !candidates.some((other) => other !== t && this.ancestors(other).has(t)));
  }
}
