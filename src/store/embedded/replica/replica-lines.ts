import type { View } from '../../query-service.js';
import { revisionGraph } from '../../schema/revisions.js';
import { LAYOUT } from './replica-layout.js';

export const iri = (value: string) => `<${value}>`;

/** Lines of N-Quads text, without their newlines (archive lines included). */
export const splitLines = (text: string) => text.split('\n').filter((line) => line.length > 0);

/**
 * The graph of an N-Quads line, and its triple (`s p o`). Lines are our own serialisation
 * (`quadToNq`): each ends with ` <graph> .`, and since an IRI holds no space, the last ` <` of
 * a line starts its graph whatever a literal before it contains.
 */
export const graphOf = (line: string) => line.slice(line.lastIndexOf(' <') + 2, line.endsWith('\n') ? -4 : -3);
export const tripleOf = (line: string) => line.slice(0, line.lastIndexOf(' <'));

/** The line saying that `graph` is one of the named graphs of `view`. */
export const membership = (graph: string, view: View) =>
  `${iri(graph)} ${iri(LAYOUT.inView)} ${iri(LAYOUT.view(view))} ${iri(LAYOUT.membership)} .\n`;

/** The name an object's latest graph has in the revisions view. */
export const latestLink = (object: string, number: number) =>
  `${iri(object)} ${iri(LAYOUT.latestRevision)} ${iri(revisionGraph(object, number))} ${iri(LAYOUT.membership)} .\n`;

/** Lines waiting to be loaded, and the graphs they go into (the unions and the views' membership aside). */
export class PendingLines {
  lines: string[] = [];
  graphs = new Set<string>();

  take(): string[] {
    const lines = this.lines;
    this.lines = [];
    this.graphs.clear();
    return lines;
  }
}
