/** Writes text to stdout with exactly one final newline (answers of the server may or may not end in one). */
export function printText(text: string): void {
  process.stdout.write(text.endsWith('\n') || text === '' ? text : `${text}\n`);
}

/** Rows under a header, in columns padded to the widest cell; the last column is not padded. */
export function formatTable(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]))).join('  ');
  return `${[line(header), ...rows.map(line)].join('\n')}\n`;
}

/** The part of an IRI after `#` (or the last `/`): codes, statuses and types read better short in a table. */
export function localName(iri: string): string {
  return iri.slice(Math.max(iri.lastIndexOf('#'), iri.lastIndexOf('/')) + 1);
}
