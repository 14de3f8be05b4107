import { Parser } from 'n3';
import type { Quad, Term } from '../rdf/terms.js';

/** An answer of the server read as triples, for the few values a command prints. */
export class Graph {
  private readonly bySubject = new Map<string, Quad[]>();

  constructor(readonly triples: Quad[]) {
    for (const t of triples) {
      const list = this.bySubject.get(t.subject.value);
      if (list) list.push(t);
      else this.bySubject.set(t.subject.value, [t]);
    }
  }

  static fromNTriples(text: string): Graph {
    return new Graph(new Parser({ format: 'N-Triples' }).parse(text));
  }

  objects(subject: string, predicate: string): Term[] {
    return (this.bySubject.get(subject) ?? []).filter((t) => t.predicate.value === predicate).map((t) => t.object);
  }

  /** The first value of `predicate` on `subject` (IRI or lexical form), or '' when it has none. */
  value(subject: string, predicate: string): string {
    return this.objects(subject, predicate)[0]?.value ?? '';
  }

  values(subject: string, predicate: string): string[] {
    return this.objects(subject, predicate).map((o) => o.value);
  }
}
