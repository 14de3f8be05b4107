import { namedNode, quad, type Quad } from '../../rdf/terms.js';

/**
 * The shape of the bookkeeping graphs that keep a payload together with what the server noted
 * about it (a received notification and its receipt, a dead letter and its queue entry): the
 * payload's triples put in `graph`, plus statements whose subject is the graph's own IRI, in it.
 * `about` lists them as [predicate, value]; absent ones (undefined) are left out.
 */
export function annotatedGraphQuads(
  graph: string,
  payload: readonly Quad[],
  about: readonly ([string, Quad['object']] | undefined)[],
): Quad[] {
  const g = namedNode(graph);
  const out = payload.map((t) => quad(t.subject, t.predicate, t.object, g));
  for (const statement of about) if (statement) out.push(quad(g, namedNode(statement[0]), statement[1], g));
  return out;
}

/** The payload of an annotated graph: its triples without the statements about the graph itself. */
export function payloadTriples(graph: string, graphTriples: readonly Quad[]): Quad[] {
  return graphTriples.filter((t) => t.subject.value !== graph);
}
