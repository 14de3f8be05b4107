import { namedNode, quad, type Quad, type Term } from './terms.js';

/** A key that tells terms apart by kind and value (a blank node `_:a` is not the IRI `_:a`). */
export const termKey = (t: Term) => `${t.termType}:${t.value}`;
/** A key by value alone, for data with no blank nodes (stored data: every node has an IRI). */
export const valueKey = (t: Term) => t.value;
/**
 * A key that is equal exactly when two terms are the same RDF term, literals included. IRIs never
 * hold `|`, and a literal's lexical form is length-prefixed, so keys joined with `|` never collide.
 */
export const rdfTermKey = (t: Term) =>
  t.termType === 'Literal'
    ? `L${t.value.length}:${t.value}@${t.language}^${t.datatype.value}`
    : `${t.termType === 'NamedNode' ? 'I' : 'B'}${t.value}`;

/**
 * A key that is equal exactly when two triples are the same RDF triple (their terms' `rdfTermKey`s).
 * Joined, not concatenated: a concatenation stays a tree of string objects for the garbage collector
 * to walk, in the keys of every revision kept parsed (KeyedTriples).
 */
export const termsKey = (s: Term, p: Term, o: Term) => [rdfTermKey(s), rdfTermKey(p), rdfTermKey(o)].join('|');
/** `termsKey` of a triple. */
export const tripleKey = (t: Quad) => termsKey(t.subject, t.predicate, t.object);

/** One node's triples: by predicate, each value once under its `rdfTermKey`. */
export type NodeTriples = ReadonlyMap<string, ReadonlyMap<string, Quad>>;

/** Triples grouped by subject, in input order, keyed by `keyOf(subject)`. */
export function groupBySubject(triples: Iterable<Quad>, keyOf: (t: Term) => string = termKey): Map<string, Quad[]> {
  const groups = new Map<string, Quad[]>();
  for (const t of triples) {
    const k = keyOf(t.subject);
    const list = groups.get(k);
    if (list) list.push(t);
    else groups.set(k, [t]);
  }
  return groups;
}

export interface ReachOptions {
  /** How `bySubject` is keyed (default `termKey`). */
  keyOf?: (t: Term) => string;
  /** Whether to walk on through an object; literals are never followed. Default: always. */
  follow?: (object: Term, key: string) => boolean;
}

/** The keys of the subjects reachable from `root` through objects that are subjects too, `root` included. */
export function reachable(
  root: string,
  bySubject: ReadonlyMap<string, readonly Quad[]>,
  options: ReachOptions = {},
): Set<string> {
  const keyOf = options.keyOf ?? termKey;
  const seen = new Set([root]);
  const todo = [root];
  while (todo.length > 0) {
    for (const t of bySubject.get(todo.pop()!) ?? []) {
      if (t.object.termType === 'Literal') continue;
      const child = keyOf(t.object);
      if (bySubject.has(child) && !seen.has(child) && (options.follow?.(t.object, child) ?? true)) {
        seen.add(child);
        todo.push(child);
      }
    }
  }
  return seen;
}

/** `quads` with each blank node replaced by a new IRI from `newIri` (stored data never holds blank nodes). */
export function nameBlankNodes(quads: readonly Quad[], newIri: () => string): Quad[] {
  const names = new Map<string, Term>();
  const name = <T extends Term>(t: T): T => {
    if (t.termType !== 'BlankNode') return t;
    let named = names.get(t.value);
    if (!named) {
      named = namedNode(newIri());
      names.set(t.value, named);
    }
    return named as T;
  };
  return quads.map((q) => quad(name(q.subject), q.predicate, name(q.object), q.graph));
}
