import { badRequest } from '../../errors.js';
import type { Quad } from '../../rdf/terms.js';
import { rdf } from '../../rdf/vocab.js';

/**
 * The triples of the one node typed `type` (named `what` in the error) in a request body; 400 with
 * `code` when the body holds none or several.
 */
export function onlyNodeOfType(triples: readonly Quad[], type: string, what: string, code: string): Quad[] {
  const nodes = new Set(
    triples.filter((t) => t.predicate.value === rdf.type && t.object.value === type).map((t) => t.subject.value),
  );
  if (nodes.size !== 1) throw badRequest(code, `the body must hold exactly one ${what}, not ${nodes.size}`, rdf.type);
  const [node] = nodes;
  return triples.filter((t) => t.subject.value === node);
}
