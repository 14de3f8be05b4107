import { iriToNt, isValidIri, type Quad } from '../../rdf/terms.js';
import { api, store as meta } from '../../rdf/vocab.js';
import type { SparqlReader } from '../readers.js';
import { actionRequestFromTriples, byRequestTime, type ActionRequestRecord } from '../schema/action-requests.js';
import { revisionGraph, type RevisionRecord } from '../schema/revisions.js';

/*
 * What the engine backend keeps beyond the graphs every backend shares (src/store/schema): every
 * revision in its own graph (`revisionGraph`) with its metadata in the metadata graph, and a mark
 * on each graph a commit finished, in `finishedGraphs`. The embedded store keeps the same data,
 * the older revisions and finished graphs in its archive.
 */

const p = iriToNt;

/** The SELECT clause of `variables`. */
const selectOf = (variables: readonly string[]) => `SELECT ${variables.map((v) => `?${v}`).join(' ')}`;

/** What the start's reads need of the engine: a SELECT answered as CSV, row by row (SparqlClient.selectCsv). */
export interface CsvReader {
  selectCsv(
    query: string,
    variables: readonly string[],
    onRow: (values: string[]) => void,
    expectedRows?: number,
  ): Promise<number>;
}

/**
 * The rows of `where`, each handed to `onRow`: counted, then read in one query without order (Virtuoso's cost per
 * row stays flat); fewer rows than counted means the engine's row limit cut the answer, and they are read again in
 * pages ordered by `key` (docs/sparql-engine.md, "How the server uses the engine"). `onRow` may see a row twice.
 */
async function allRows(
  reader: CsvReader,
  variables: readonly string[],
  where: string,
  key: string,
  onRow: (values: string[]) => void,
): Promise<void> {
  let counted = 0;
  await reader.selectCsv(
    `SELECT (COUNT(*) AS ?rows) WHERE { ${where} }`,
    ['rows'],
    ([rows]) => (counted = Number(rows)),
  );
  const read = await reader.selectCsv(`${selectOf(variables)} WHERE { ${where} }`, variables, onRow, counted);
  if (read < counted) await pagedRows(reader, variables, where, key, onRow);
}

/**
 * The rows of `where` in pages of at most PAGE_ROWS, in the order of `key`, each page after the last
 * key of the one before: within any row limit of the engine, though each page has the engine order
 * every row again, so the whole read grows with the square of the rows.
 */
async function pagedRows(
  reader: CsvReader,
  variables: readonly string[],
  where: string,
  key: string,
  onRow: (values: string[]) => void,
): Promise<void> {
  const withKey = [...variables, key];
  for (let after: string | undefined; ; ) {
    const from = after === undefined ? '' : `FILTER (STR(?${key}) > ${JSON.stringify(after)})`;
    let last: string | undefined;
    const rows = await reader.selectCsv(
      `${selectOf(withKey)} WHERE { ${where} ${from} } ORDER BY STR(?${key}) LIMIT ${PAGE_ROWS}`,
      withKey,
      (values) => {
        last = values[variables.length];
        onRow(values.slice(0, variables.length));
      },
    );
    if (rows < PAGE_ROWS || last === undefined) return;
    after = last;
  }
}

/**
 * Rows of one page of a read cut by the engine's row limit: Virtuoso's default ResultSetMaxRows and MaxSortedTopRows.
 */
const PAGE_ROWS = 10_000;

/**
 * Revision 1 and the latest revision of every object: what the revision index is rebuilt from. Read
 * as CSV (every column an IRI or a plain number or date), far cheaper for Virtuoso than SPARQL JSON;
 * the graph's name is not read, as it follows from the object and the number (`revisionGraph`).
 */
export async function readCreatedAndLatestRevisions(reader: CsvReader): Promise<RevisionRecord[]> {
  const where = `GRAPH ${p(meta.metaGraph)} {
    ?g ${p(meta.revisionOf)} ?o ; ${p(meta.revisionNumber)} ?n ; ${p(meta.revisionCreatedAt)} ?at ;
       ${p(meta.revisionCreatedBy)} ?by ; ${p(meta.revisionType)} ?type }`;
  const first = new Map<string, RevisionRecord>();
  const latest = new Map<string, RevisionRecord>();
  // Agents and types repeat: one string each for all revisions.
  const shared = new Map<string, string>();
  const once = (value: string) => {
    const kept = shared.get(value);
    if (kept !== undefined) return kept;
    // Keyed by the detached copy too: the key must not hold the answer's text either.
    const copy = detached(value);
    shared.set(copy, copy);
    return copy;
  };
  await allRows(reader, ['o', 'n', 'at', 'by', 'type'], where, 'g', ([iri, n, at, by, type]) => {
    const number = Number(n);
    const object = detached(iri);
    const r = {
      object,
      number,
      graph: revisionGraph(object, number),
      createdAt: new Date(at),
      createdBy: once(by),
      mostSpecificType: once(type),
    };
    if (number === 1) first.set(object, r);
    if (number > (latest.get(object)?.number ?? 0)) latest.set(object, r);
  });
  const out = [...first.values()];
  for (const r of latest.values()) if (r.number > 1) out.push(r);
  return out.sort((a, b) => a.number - b.number);
}

/**
 * `value` apart from the text it was read from: a parsed field is a slice that keeps its whole chunk
 * of the answer in memory, and the revision index keeps some field of every chunk.
 */
const detached = (value: string) => ` ${value}`.slice(1);

/** The metadata of one revision. */
export async function readRevision(reader: SparqlReader, graph: string): Promise<RevisionRecord | undefined> {
  const rows = await reader.select(`SELECT ?o ?n ?at ?by ?type WHERE { GRAPH ${p(meta.metaGraph)} {
    ${p(graph)} ${p(meta.revisionOf)} ?o ; ${p(meta.revisionNumber)} ?n ; ${p(meta.revisionCreatedAt)} ?at ;
       ${p(meta.revisionCreatedBy)} ?by ; ${p(meta.revisionType)} ?type } } LIMIT 1`);
  const b = rows.results.bindings[0];
  return (
    b && {
      object: b.o.value,
      number: Number(b.n.value),
      graph,
      createdAt: new Date(b.at.value),
      createdBy: b.by.value,
      mostSpecificType: b.type.value,
    }
  );
}

/** The finished action requests (about `object`, or all), oldest first, read from their graphs in one query. */
export async function readFinishedRequests(
  reader: { triplesByGraph(where: string): Promise<Map<string, Quad[]>> },
  object?: string,
): Promise<ActionRequestRecord[]> {
  if (object !== undefined && !isValidIri(object)) return [];
  const about = object === undefined ? '' : `GRAPH ?g { ?g ${p(meta.concerns)} ${p(object)} }`;
  const graphs = await reader.triplesByGraph(
    `GRAPH ${p(meta.finishedGraphs)} { ?g ${p(meta.finishedGraph)} ?done } ${about} GRAPH ?g { ?g ` +
      `${p(api.isRequestedBy)} ?by }`,
  );
  const records = [...graphs].map(([iri, triples]) => actionRequestFromTriples(iri, triples));
  return records.filter((r): r is ActionRequestRecord => r !== undefined).sort(byRequestTime);
}
