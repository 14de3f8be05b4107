import { randomUUID } from 'node:crypto';
import { iriToNt, literal, namedNode, quad, type Quad } from '../../rdf/terms.js';
import { STORE, xsd } from '../../rdf/vocab.js';
import type { SparqlReader } from '../readers.js';

const MARKS_GRAPH = `${STORE}commit-marks`;
const MARKED = `${STORE}committed`;

/** The mark one commit leaves in the engine, in the same operation as its data. */
export interface CommitMark {
  iri: string;
  quad: Quad;
}

const markQuad = (iri: string) => quad(namedNode(iri), namedNode(MARKED), literal('true', namedNode(xsd.boolean)), namedNode(MARKS_GRAPH));

/**
 * Every commit leaves a mark in the engine, written by the same operation as its data: when the
 * engine's answer is lost (a timeout, a connection cut), asking for the mark tells whether the
 * commit was applied. Marks of commits known to be applied are removed by the next commits, so
 * the engine holds a few at most.
 */
export class CommitMarks {
  /** Marks of commits known to be applied, not yet removed. */
  private known: string[] = [];

  /** A new mark, and the quads that remove the known ones (in the same operation). */
  next(): { mark: CommitMark; removing: Quad[]; removed: readonly string[] } {
    const iri = `${STORE}commit:${randomUUID()}`;
    const removed = [...this.known];
    return { mark: { iri, quad: markQuad(iri) }, removing: removed.map(markQuad), removed };
  }

  /** The commit of `mark` is applied, and with it the removal of `removed`. */
  settled(mark: CommitMark, removed: readonly string[]): void {
    const gone = new Set(removed);
    this.known = [...this.known.filter((iri) => !gone.has(iri)), mark.iri];
  }

  /** Whether the commit of `mark` was applied (rejects while the engine does not answer). */
  async applied(engine: SparqlReader, mark: CommitMark): Promise<boolean> {
    const rows = await engine.select(`SELECT ?done WHERE { GRAPH ${iriToNt(MARKS_GRAPH)} { ${iriToNt(mark.iri)} ${iriToNt(MARKED)} ?done } } LIMIT 1`);
    return rows.results.bindings.length > 0;
  }
}
