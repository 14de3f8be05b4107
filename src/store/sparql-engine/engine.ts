import type { SparqlJsonResults } from '../readers.js';
import { EngineDeadlockError } from './sparql-client.js';

/** What the store needs of a SPARQL 1.1 engine (SparqlClient: the Protocol over HTTP). */
export interface SparqlEngine {
  select(query: string): Promise<SparqlJsonResults>;
  /** A CONSTRUCT's answer as N-Triples. */
  construct(query: string): Promise<string>;
  update(text: string): Promise<string>;
}

/**
 * Tries of an update the engine rolled back to end a deadlock (the one it chose to lose), with a random pause growing
 * by this much each time.
 */
const DEADLOCK_ATTEMPTS = 8;
const DEADLOCK_BACKOFF_MS = 20;

export const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Sends an update, again after a deadlock; answers the engine's answer. */
export async function updateRetried(engine: Pick<SparqlEngine, 'update'>, text: string): Promise<string> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await engine.update(text);
    } catch (err) {
      if (!(err instanceof EngineDeadlockError) || attempt >= DEADLOCK_ATTEMPTS) throw err;
      await pause(Math.random() * DEADLOCK_BACKOFF_MS * attempt);
    }
  }
}
