import { randomUUID } from 'node:crypto';
import { iriToNt, literal, termToNt } from '../../rdf/terms.js';
import { STORE } from '../../rdf/vocab.js';
import type { SparqlReader } from '../readers.js';

const INTENTS_GRAPH = `${STORE}commit-intents`;
const INTENDED_UPDATE = `${STORE}intendedUpdate`;

/** The intent of one commit: the update operation that applies it, stored before that operation is sent. */
export interface CommitIntent {
  iri: string;
  update: string;
}

/** Intents of applied commits are removed this many at a time, in an operation of their own. */
export const INTENTS_REMOVED_TOGETHER = 200;

/**
 * Virtuoso keeps part of an operation when the caller's connection drops while it runs (a server
 * SIGKILLed: docs/sparql-engine.md), so every commit first stores its operation's text, as one quad
 * (one INSERT DATA of one quad is applied whole or not at all), then sends the operation. Sending
 * an operation again is harmless (its deletions and insertions are constants, or staged ones), so a
 * commit whose answer is lost is sent again until it is known to be applied, and a start sends the
 * stored operations again, oldest first, before reading anything: what a crash cut off is completed.
 * Sending again the operations of commits applied before also gives the same state: each quad they
 * touch ends as the last of them left it. Intents of applied commits are removed in batches.
 */
export class CommitIntents {
  /** Orders the intents of this process after those of earlier ones, and among themselves. */
  private readonly prefix = `${STORE}commit:${Date.now().toString().padStart(15, '0')}-${randomUUID()}-`;
  private sequence = 0;
  /** Intents of commits known to be applied, not yet removed. */
  private applied: string[] = [];

  next(update: string): CommitIntent {
    return { iri: `${this.prefix}${String(++this.sequence).padStart(12, '0')}`, update };
  }

  /** The operation storing `intent`. */
  recording(intent: CommitIntent): string {
    return `INSERT DATA { GRAPH ${iriToNt(INTENTS_GRAPH)} { ${iriToNt(intent.iri)} ${iriToNt(INTENDED_UPDATE)} ${termToNt(literal(intent.update))} } }`;
  }

  /** The commit of `intent` is applied. */
  settled(intent: CommitIntent): void {
    this.applied.push(intent.iri);
  }

  /** Once enough intents of applied commits gathered: them, taken out of the list (`restore` them if removing them fails). */
  removable(): string[] | undefined {
    if (this.applied.length < INTENTS_REMOVED_TOGETHER) return undefined;
    return this.applied.splice(0, this.applied.length);
  }

  restore(iris: readonly string[]): void {
    this.applied.push(...iris);
  }
}

/** The operation removing the intents `iris` (matched by name: their texts need not be sent back). */
export function intentsRemoval(iris: readonly string[]): string {
  return `DELETE { GRAPH ${iriToNt(INTENTS_GRAPH)} { ?intent ?p ?o } } WHERE { VALUES ?intent { ${iris.map(iriToNt).join(' ')} } GRAPH ${iriToNt(INTENTS_GRAPH)} { ?intent ?p ?o } }`;
}

/** Every stored intent, oldest first. */
export async function storedIntents(reader: SparqlReader): Promise<CommitIntent[]> {
  const rows = await reader.select(`SELECT ?intent ?update WHERE { GRAPH ${iriToNt(INTENTS_GRAPH)} { ?intent ${iriToNt(INTENDED_UPDATE)} ?update } } ORDER BY ?intent`);
  return rows.results.bindings.map((b) => ({ iri: b.intent.value, update: b.update.value }));
}
