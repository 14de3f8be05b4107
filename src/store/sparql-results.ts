import type { SparqlJsonResults } from './readers.js';
import { writeRdf } from '../rdf/rdf-writer.js';
import { groupBySubject } from '../rdf/triples.js';
import { tripleToNt, type Quad } from '../rdf/terms.js';

type Binding = SparqlJsonResults['results']['bindings'][number][string];

const XSD_STRING = 'http://www.w3.org/2001/XMLSchema#string';

const escapeXml = (text: string) =>
  text.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);

function xmlTerm(term: Binding): string {
  if (term.type === 'uri') return `<uri>${escapeXml(term.value)}</uri>`;
  if (term.type === 'bnode') return `<bnode>${escapeXml(term.value)}</bnode>`;
  const lang = term['xml:lang'] ? ` xml:lang="${escapeXml(term['xml:lang'])}"` : '';
  const datatype = term.datatype ? ` datatype="${escapeXml(term.datatype)}"` : '';
  return `<literal${lang}${datatype}>${escapeXml(term.value)}</literal>`;
}

/** SPARQL 1.1 Query Results XML Format. */
function toXml({ head, results }: SparqlJsonResults): string {
  const out = ['<?xml version="1.0"?>\n<sparql xmlns="http://www.w3.org/2005/sparql-results#"><head>'];
  for (const v of head.vars) out.push(`<variable name="${escapeXml(v)}"/>`);
  out.push('</head><results>');
  for (const row of results.bindings) {
    out.push('<result>');
    for (const [name, term] of Object.entries(row))
      out.push(`<binding name="${escapeXml(name)}">${xmlTerm(term)}</binding>`);
    out.push('</result>');
  }
  out.push('</results></sparql>\n');
  return out.join('');
}

/** SPARQL 1.1 CSV: plain values, quoted when they hold a quote, comma or line break; CRLF lines. */
function toCsv({ head, results }: SparqlJsonResults): string {
  const field = (value: string) => (/[",\r\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value);
  const cell = (term: Binding | undefined) =>
    term === undefined ? '' : field(term.type === 'bnode' ? `_:${term.value}` : term.value);
  const lines = [
    head.vars.map(field).join(','),
    ...results.bindings.map((row) => head.vars.map((v) => cell(row[v])).join(',')),
  ];
  return `${lines.join('\r\n')}\r\n`;
}

const escapeString = (text: string) =>
  text.replace(/[\\"\n\r\t]/g, (c) => ({ '\\': '\\\\', '"': '\\"', '\n': '\\n', '\r': '\\r', '\t': '\\t' })[c]!);

function tsvTerm(term: Binding | undefined): string {
  if (term === undefined) return '';
  if (term.type === 'uri') return `<${term.value}>`;
  if (term.type === 'bnode') return `_:${term.value}`;
  const lexical = `"${escapeString(term.value)}"`;
  if (term['xml:lang']) return `${lexical}@${term['xml:lang']}`;
  return term.datatype && term.datatype !== XSD_STRING ? `${lexical}^^<${term.datatype}>` : lexical;
}

/** SPARQL 1.1 TSV: terms in Turtle syntax, tab separated. */
function toTsv({ head, results }: SparqlJsonResults): string {
  const lines = [
    head.vars.map((v) => `?${v}`).join('\t'),
    ...results.bindings.map((row) => head.vars.map((v) => tsvTerm(row[v])).join('\t')),
  ];
  return `${lines.join('\n')}\n`;
}

/** Writes SELECT results, given as SPARQL JSON, in one of the SPARQL results formats. */
export function writeSolutions(results: SparqlJsonResults, format: 'json' | 'xml' | 'csv' | 'tsv'): string {
  switch (format) {
    case 'json':
      return JSON.stringify(results);
    case 'xml':
      return toXml(results);
    case 'csv':
      return toCsv(results);
    case 'tsv':
      return toTsv(results);
  }
}

/** Writes the answer to an ASK, as the embedded store (Oxigraph) writes it. */
export function writeBoolean(value: boolean, format: 'json' | 'xml' | 'csv' | 'tsv'): string {
  switch (format) {
    case 'json':
      return JSON.stringify({ head: {}, boolean: value });
    case 'xml':
      return (
        `<?xml version="1.0"?><sparql ` +
        `xmlns="http://www.w3.org/2005/sparql-results#"><head></head><boolean>${value}</boolean></sparql>`
      );
    case 'csv':
    case 'tsv':
      return String(value);
  }
}

type JsonLdValue = { '@id': string } | { '@value': string; '@language'?: string; '@type'?: string };

const jsonLdValue = (object: Quad['object']): JsonLdValue => {
  if (object.termType !== 'Literal')
    return { '@id': object.termType === 'BlankNode' ? `_:${object.value}` : object.value };
  if (object.language) return { '@language': object.language, '@value': object.value };
  return object.datatype.value === XSD_STRING
    ? { '@value': object.value }
    : { '@type': object.datatype.value, '@value': object.value };
};

/** Expanded JSON-LD, one node object per subject (the form Oxigraph writes a CONSTRUCT's graph in). */
function toExpandedJsonLd(triples: readonly Quad[]): string {
  const nodes = [...groupBySubject(triples).values()].map((group) => {
    const node: Record<string, unknown> = {
      '@id': group[0].subject.termType === 'BlankNode' ? `_:${group[0].subject.value}` : group[0].subject.value,
    };
    for (const t of group) {
      node[t.predicate.value] ??= [];
      (node[t.predicate.value] as JsonLdValue[]).push(jsonLdValue(t.object));
    }
    return node;
  });
  return JSON.stringify(nodes);
}

/** Writes the graph a CONSTRUCT or DESCRIBE built in one of the RDF formats. */
export async function writeTriples(
  triples: readonly Quad[],
  format: 'turtle' | 'ntriples' | 'jsonld',
): Promise<string> {
  switch (format) {
    case 'ntriples':
      return triples.map(tripleToNt).join('');
    case 'turtle':
      return writeRdf(triples, 'turtle');
    case 'jsonld':
      return toExpandedJsonLd(triples);
  }
}
