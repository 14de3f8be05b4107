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

/** Marks of applied commits are removed this many at a time, in an operation of their own. */
const MARKS_REMOVED_TOGETHER = 200;

/**
 * Every commit leaves a mark in the engine, written by the same operation as its data: when the
 * engine's answer is lost (a timeout, a connection cut), asking for the mark tells whether the
 * commit was applied. Marks of commits known to be applied are removed in batches (`removable`),
 * not by the commits themselves: a commit that only inserts stays an INSERT DATA.
 */
export class CommitMarks {
  /** Marks of commits known to be applied, not yet removed. */
  private known: string[] = [];

  next(): CommitMark {
    const iri = `${STORE}commit:${randomUUID()}`;
    return { iri, quad: markQuad(iri) };
  }

  /** The commit of `mark` is applied. */
  settled(mark: CommitMark): void {
    this.known.push(mark.iri);
  }

  /** Once enough marks of applied commits gathered: them, taken out of the list (`restore` them if removing them fails). */
  removable(): string[] | undefined {
    if (this.known.length < MARKS_REMOVED_TOGETHER) return undefined;
    return this.known.splice(0, this.known.length);
  }

  restore(marks: readonly string[]): void {
    this.known.push(...marks);
  }

  /** The quads of `marks`, to delete. */
  quads(marks: readonly string[]): Quad[] {
    return marks.map(markQuad);
  }

  /** Whether the commit of `mark` was applied (rejects while the engine does not answer). */
  async applied(engine: SparqlReader, mark: CommitMark): Promise<boolean> {
    const rows = await engine.select(`SELECT ?done WHERE { GRAPH ${iriToNt(MARKS_GRAPH)} { ${iriToNt(mark.iri)} ${iriToNt(MARKED)} ?done } } LIMIT 1`);
    return rows.results.bindings.length > 0;
  }
}
