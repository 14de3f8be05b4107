import type { SparqlJsonResults } from './readers.js';

type Binding = SparqlJsonResults['results']['bindings'][number][string];

const XSD_STRING = 'http://www.w3.org/2001/XMLSchema#string';

const escapeXml = (text: string) => text.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);

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
    for (const [name, term] of Object.entries(row)) out.push(`<binding name="${escapeXml(name)}">${xmlTerm(term)}</binding>`);
    out.push('</result>');
  }
  out.push('</results></sparql>\n');
  return out.join('');
}

/** SPARQL 1.1 CSV: plain values, quoted when they hold a quote, comma or line break; CRLF lines. */
function toCsv({ head, results }: SparqlJsonResults): string {
  const field = (value: string) => (/[",\r\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value);
  const cell = (term: Binding | undefined) => (term === undefined ? '' : field(term.type === 'bnode' ? `_:${term.value}` : term.value));
  return [head.vars.map(field).join(','), ...results.bindings.map((row) => head.vars.map((v) => cell(row[v])).join(','))].join('\r\n') + '\r\n';
}

const escapeString = (text: string) => text.replace(/[\\"\n\r\t]/g, (c) => ({ '\\': '\\\\', '"': '\\"', '\n': '\\n', '\r': '\\r', '\t': '\\t' })[c]!);

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
  return [head.vars.map((v) => `?${v}`).join('\t'), ...results.bindings.map((row) => head.vars.map((v) => tsvTerm(row[v])).join('\t'))].join('\n') + '\n';
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
