import { api } from '../rdf/vocab.js';
import { RDF_FORMATS, RDF_MEDIA_TYPES, type ApiClient, type SendOptions } from './api-client.js';
import { choiceOption, type OptionValues } from './command.js';
import { Graph } from './graph.js';
import { formatTable, printText } from './output.js';

export const LISTING_FORMATS = ['table', ...RDF_FORMATS] as const;

export interface Columns {
  header: string[];
  /** The cells of one item of the collection. */
  row(graph: Graph, item: string): string[];
}

/**
 * Prints an api:Collection the server answers: a table of its items (read from N-Triples, in the
 * server's order), or the answer as it came in the RDF format asked for.
 */
export async function printListing(
  client: ApiClient,
  target: string,
  query: SendOptions['query'],
  values: OptionValues,
  columns: Columns,
): Promise<void> {
  const format = choiceOption(values, 'format', LISTING_FORMATS, 'table');
  const accept = format === 'table' ? RDF_MEDIA_TYPES.nt : RDF_MEDIA_TYPES[format];
  const text = await (await client.expect([200], 'GET', target, { accept, query })).text();
  if (format !== 'table') return printText(text);
  const graph = Graph.fromNTriples(text);
  const items = graph.triples.filter((t) => t.predicate.value === api.hasItem).map((t) => t.object.value);
  process.stdout.write(
    formatTable(
      columns.header,
      items.map((item) => columns.row(graph, item)),
    ),
  );
}
