import sparqljs from 'sparqljs';
import { invalidQuery } from '../query-errors.js';
import { XSD } from '../../rdf/vocab.js';
import type { Dataset } from '../query-service.js';

/*
 * A query as the engine runs it: over the dataset the server chose, whatever the query says. The
 * engine holds every graph side by side (bookkeeping, every revision, other callers' data), so the
 * query's own FROM / FROM NAMED are replaced, and both lists are always given: Virtuoso lets
 * `GRAPH ?g` range over every graph of the engine when a query names no FROM NAMED, and its
 * default graph is every graph when it names no FROM.
 */

/**
 * Graphs a dataset may list at most, each list apart: Virtuoso 7.2.5 refuses one more FROM (or FROM
 * NAMED) clause ("SP030: Too many arguments for standard built-in function in operator()").
 * docs/sparql-engine.md, "SPARQL analytics".
 */
export const MAX_DATASET_GRAPHS = 4094;

/** A graph no store holds: an empty list would mean "every graph" to the engine. */
export const NO_GRAPH = 'urn:onerecord:query:no-graph';

type Node = Record<string, unknown>;

/** Every object of a parsed query's tree, depth first. */
function* nodesOf(node: unknown): Generator<Node> {
  if (Array.isArray(node)) for (const item of node) yield* nodesOf(item);
  else if (typeof node === 'object' && node !== null && !('termType' in node)) {
    yield node as Node;
    for (const value of Object.values(node)) yield* nodesOf(value);
  }
}

/**
 * Refuses what the embedded store does not run and the engine would: SERVICE (a call to another
 * endpoint, made by the engine past every graph scoping), and functions outside the standard ones
 * and XSD casts (Virtuoso's `bif:` and `sql:` functions reach its SQL tables, some of them write).
 */
function checkOnEngine(query: sparqljs.SparqlQuery): void {
  for (const node of nodesOf(query)) {
    if (node.type === 'service')
      throw invalidQuery(
        "SERVICE is not available on this server (store.backend sparql): a query runs over this server's data only",
      );
    if (node.type === 'functionCall') {
      const name = (node.function as { value?: string } | undefined)?.value ?? '';
      if (!name.startsWith(XSD))
        throw invalidQuery(`the function <${name}> is not available: only SPARQL's own functions and XSD casts are`);
    }
  }
}

const parse = (text: string) => new sparqljs.Parser().parse(text) as sparqljs.Query;

/** Refuses (400) a checked query that the engine must not run (see checkOnEngine). */
export function checkEngineQuery(text: string): void {
  checkOnEngine(parse(text));
}

/** The query with exactly `dataset` as its FROM and FROM NAMED (a graph no store holds for an empty list). */
export function withDataset(text: string, dataset: Dataset): string {
  const query = parse(text);
  const graphs = (list: readonly string[]) =>
    (list.length > 0 ? list : [NO_GRAPH]).map((value) => ({ termType: 'NamedNode', value }) as sparqljs.IriTerm);
  query.from = { default: graphs(dataset.default), named: graphs(dataset.named) };
  return new sparqljs.Generator().stringify(query);
}
