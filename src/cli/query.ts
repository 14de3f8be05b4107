import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { parseQueryFile, type QueryFile } from '../domain/analytics/query-files.js';
import {
  choiceOption,
  EXIT,
  readInputFile,
  remoteCommand,
  textOption,
  UsageError,
  type OptionValues,
} from './command.js';
import { formatTable, printText } from './output.js';

const SPARQL_JSON = 'application/sparql-results+json';

/** What each --format asks for; a CONSTRUCT or DESCRIBE query is answered in Turtle whatever the format. */
const FORMAT_ACCEPT = {
  tsv: 'text/tab-separated-values',
  table: SPARQL_JSON,
  csv: 'text/csv',
  json: SPARQL_JSON,
} as const;
const FORMATS = Object.keys(FORMAT_ACCEPT) as (keyof typeof FORMAT_ACCEPT)[];

interface SparqlJson {
  head: { vars?: string[] };
  boolean?: boolean;
  results?: { bindings: Record<string, { value: string }>[] };
}

function readQuery(source: string): QueryFile {
  const text = source === '-' ? readFileSync(0, 'utf8') : readInputFile(source);
  try {
    return parseQueryFile(source === '-' ? 'stdin' : basename(source, '.rq'), text);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

function acceptOf(values: OptionValues): string {
  const accept = textOption(values, 'accept');
  if (accept !== undefined && textOption(values, 'format') !== undefined)
    throw new UsageError('give --format or --accept, not both');
  return accept ?? `${FORMAT_ACCEPT[choiceOption(values, 'format', FORMATS, 'tsv')]}, text/turtle;q=0.9`;
}

function sparqlTable(answer: SparqlJson): string {
  if (answer.boolean !== undefined) return `${answer.boolean}\n`;
  const vars = answer.head.vars ?? [];
  return formatTable(
    vars,
    (answer.results?.bindings ?? []).map((b) => vars.map((v) => b[v]?.value ?? '')),
  );
}

export const queryCommand = remoteCommand({
  name: 'query',
  synopsis: '<file.rq|-> [--view latest|events|revisions|audit] [--format tsv|table|csv|json] [--accept <media type>]',
  description: `Runs a SPARQL query (a file, or - for stdin) on the server's /sparql endpoint and prints the answer:
TSV by default for SELECT/ASK, aligned columns (table), CSV or SPARQL JSON; Turtle for CONSTRUCT/
DESCRIBE, unless --accept asks for another media type. The view comes from a "# view: …" line of the
query unless --view is given.`,
  example: 'npx onerecord query scripts/queries/shipments-gross-weight.rq --format table',
  options: { view: { type: 'string' }, format: { type: 'string' }, accept: { type: 'string' } },
  arity: [1, 1],
  async run({ args, values }, client) {
    const query = readQuery(args[0]);
    const res = await client.expect([200], 'POST', '/sparql', {
      query: { view: textOption(values, 'view') ?? query.view },
      contentType: 'application/sparql-query',
      accept: acceptOf(values),
      body: query.text,
    });
    const body = await res.text();
    const tabulate =
      textOption(values, 'format') === 'table' && res.headers.get('content-type')?.startsWith(SPARQL_JSON);
    printText(tabulate ? sparqlTable(JSON.parse(body) as SparqlJson) : body);
    const truncated = res.headers.get('sparql-results-truncated');
    if (truncated) console.error(`(answer cut at the server's row cap: ${truncated})`);
    return EXIT.ok;
  },
});
