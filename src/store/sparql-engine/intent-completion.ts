import { StoreUnavailableError } from '../errors.js';
import type { SparqlReader } from '../readers.js';
import { appliedIntents } from './commit-feed.js';
import {
  asCompleter,
  completerOf,
  completionClaim,
  completionClaimRemoval,
  INTENTS_REMOVED_TOGETHER,
  intentsRemoval,
  reportsInsert,
  storedIntentNames,
  storedIntents,
  takenOver,
} from './commit-intents.js';
import { type SparqlEngine, updateRetried } from './engine.js';

/**
 * Sending stored intents again (what a crash or a lost answer cut off) and removing the applied
 * ones: alone on the engine at start, with other processes for those a dead one left.
 */
export class IntentCompletion {
  constructor(
    private readonly engine: SparqlEngine,
    /** The store's reads (its literals normalised), for the commit feed. */
    private readonly reader: SparqlReader,
    /** This process's name (CommitIntents.process). */
    private readonly process: string,
    /** Whether other processes write to the engine (the commit feed tells which intents are applied). */
    private readonly shared: boolean,
  ) {}

  /**
   * Completes what a crash cut off: sends the stored intents `of` selects again, oldest first (a refused one changed
   * nothing), then removes those applied and sent. Alone, all of them at start; with other processes, only the
   * unapplied ones of dead processes this process may `complete` (docs/sparql-engine.md, "Several processes").
   */
  async completeIntents(
    of: (intent: string) => boolean = () => true,
    complete?: (intent: string) => Promise<boolean>,
  ): Promise<number> {
    const stored = (await storedIntents(this.engine)).filter((i) => of(i.iri));
    const iris = stored.map((i) => i.iri);
    const applied = this.shared ? await appliedIntents(this.reader, iris) : new Set<string>();
    const sent: string[] = [];
    for (const intent of stored) {
      if (applied.has(intent.iri) || (complete && !(await complete(intent.iri)))) continue;
      let update = intent.update;
      if (complete) {
        // Its process, paused rather than dead, may send it yet: taken over first, it then changes nothing; and
        // one sent before that may have been applied meanwhile.
        await updateRetried(this.engine, takenOver(intent.iri));
        if ((await appliedIntents(this.reader, [intent.iri])).size > 0) {
          applied.add(intent.iri);
          continue;
        }
        update = asCompleter(update, intent.iri, this.process);
      }
      await updateRetried(this.engine, update).catch((err: unknown) => {
        if (err instanceof StoreUnavailableError) throw err;
      });
      sent.push(intent.iri);
    }
    await this.removeNamed([...applied, ...sent]);
    return sent.length;
  }

  /**
   * Whether this process completes `intent`: it claims it now, or did before (an attempt cut short);
   * the claim of a completer that `isDead` is taken over. Sent by two processes at once, an
   * operation could apply twice, the second time over a later write of a third process to what it
   * does not claim (a queue position that a rewind lowered, say).
   */
  async claim(intent: string, isDead: (process: string) => boolean): Promise<boolean> {
    const own = this.process;
    for (let attempt = 1; attempt <= 2; attempt++) {
      if (reportsInsert(await updateRetried(this.engine, completionClaim(intent, own)))) return true;
      const completer = await completerOf(this.engine, intent);
      // None: the intent is gone (applied and removed by another process).
      if (completer === own) return true;
      if (completer === undefined || !isDead(completer)) return false;
      await updateRetried(this.engine, completionClaimRemoval(intent, completer));
    }
    return false;
  }

  /**
   * Removes the stored intents, of every process, whose commits are applied (`appliedIntents`): a
   * process removes its own in batches, and one that died leaves its last ones; removed while their
   * feed entries are kept, they are never taken for unapplied ones.
   */
  async removeApplied(): Promise<void> {
    await this.removeNamed([...(await appliedIntents(this.reader, [...(await storedIntentNames(this.engine))]))]);
  }

  private async removeNamed(iris: readonly string[]): Promise<void> {
    for (let from = 0; from < iris.length; from += INTENTS_REMOVED_TOGETHER)
      await updateRetried(this.engine, intentsRemoval(iris.slice(from, from + INTENTS_REMOVED_TOGETHER)));
  }
}
