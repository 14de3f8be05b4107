import { readFileSync } from 'node:fs';
import { Parser } from 'n3';
import { api, rdf } from './vocab.js';

/**
 * What the server needs from the API ontology: the individuals of its enumerations (such as the
 * NotificationEventType values). Read from the official Turtle file under ontology/.
 */
export class ApiOntology {
  private readonly individuals = new Map<string, Set<string>>();

  constructor(turtle: string) {
    for (const q of new Parser().parse(turtle)) {
      if (q.predicate.value !== rdf.type || q.subject.termType !== 'NamedNode' || q.object.termType !== 'NamedNode')
        continue;
      const set = this.individuals.get(q.object.value) ?? new Set<string>();
      set.add(q.subject.value);
      this.individuals.set(q.object.value, set);
    }
  }

  static fromFile(path: string): ApiOntology {
    return new ApiOntology(readFileSync(path, 'utf8'));
  }

  /** The named individuals of `enumeration` (e.g. api:NotificationEventType). */
  valuesOf(enumeration: string): ReadonlySet<string> {
    return this.individuals.get(enumeration) ?? new Set();
  }

  isNotificationEventType(iri: string): boolean {
    return this.valuesOf(api.NotificationEventType).has(iri);
  }
}
