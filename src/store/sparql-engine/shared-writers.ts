import type { SparqlReader } from '../readers.js';
import { appliedIntents, feedTrim } from './commit-feed.js';
import { processOf, storedIntentNames } from './commit-intents.js';
import { type SparqlEngine, updateRetried } from './engine.js';
import type { IntentCompletion } from './intent-completion.js';
import { heartbeat, lastSeen, livenessTrim } from './process-liveness.js';

/** With other processes on the engine (`sharedWriters`): how this one follows their commits (commit-feed.ts). */
export interface SharedWritersOptions {
  /** Reads the feed this often. */
  pollMs: number;
  /** A position not filled this long is taken for a rolled-back operation and skipped. */
  gapWaitMs: number;
  /** Feed entries older than this are removed: longer than any process takes to start. */
  retentionMs: number;
  /** A process not seen for this long is dead: the others complete the writes it left. */
  deadAfterMs: number;
  log: (message: string) => void;
  observeLag?: (seconds: number) => void;
}

/** How often a process removes feed entries older than `retentionMs` (at most: twice per `retentionMs`). */
const FEED_TRIM_EVERY_MS = 60_000;

const messageOf = (err: unknown) => (err as Error).message;

/**
 * A process's part in the upkeep of an engine shared with others: it records that it is alive,
 * completes the writes of processes that died, and removes old feed entries, liveness records and
 * applied intents.
 */
export class SharedWritersUpkeep {
  private stopped = false;
  private livenessTimer: NodeJS.Timeout | undefined;
  private trimTimer: NodeJS.Timeout | undefined;
  private completing: Promise<void> | undefined;

  constructor(
    private readonly engine: SparqlEngine,
    /** The store's reads (its literals normalised), for the commit feed. */
    private readonly reader: SparqlReader,
    private readonly intents: { readonly process: string; isOwn(intent: string): boolean },
    private readonly completion: IntentCompletion,
    private readonly options: SharedWritersOptions,
  ) {}

  /**
   * Every fifth of `deadAfterMs`, records that this process is alive; every other time, completes
   * the intents of processes not seen for `deadAfterMs` (killed with a write stored, not applied:
   * its slots held until then). One process at a time completes an intent (`IntentCompletion.claim`),
   * and holds it while seen alive: so the record goes on while a completion waits for the engine.
   */
  scheduleLiveness(tick = 0): void {
    if (this.stopped) return;
    const { log, deadAfterMs } = this.options;
    this.livenessTimer = setTimeout(
      () => {
        if (tick % 2 === 1)
          this.completeAbandoned().catch((err: unknown) =>
            log(`completing the writes of dead processes failed: ${messageOf(err)}`),
          );
        updateRetried(this.engine, heartbeat(this.intents.process, new Date()))
          .catch((err: unknown) => log(`recording this process as alive failed: ${messageOf(err)}`))
          .finally(() => this.scheduleLiveness(tick + 1));
      },
      tick === 0 ? 0 : deadAfterMs / 5,
    );
    this.livenessTimer.unref();
  }

  /**
   * Waits until the writes other processes had stored and not applied when this one starts are
   * applied, by them, or completed, a dead one's once it is taken for dead: an operation cut off
   * by a SIGKILL leaves part of it in the engine (docs/sparql-engine.md, "Known limits"), which the
   * state read at start would take for whole (a revision listed without its data). After three
   * times `deadAfterMs` it goes on, logged.
   */
  async awaitWritesUnderWay(): Promise<void> {
    const { log, deadAfterMs } = this.options;
    const unapplied = async (among?: readonly string[]) => {
      const stored = [...(await storedIntentNames(this.engine, among))];
      const applied = await appliedIntents(this.reader, stored);
      return stored.filter((i) => !applied.has(i));
    };
    let waiting = await unapplied();
    if (waiting.length === 0) return;
    const processes = () => [...new Set(waiting.map((i) => processOf(i).process))].join(', ');
    log(`waiting for ${waiting.length} write(s) under way by ${processes()} before reading the engine`);
    for (const deadline = Date.now() + 3 * deadAfterMs; Date.now() < deadline; ) {
      await new Promise((resolve) => setTimeout(resolve, deadAfterMs / 20));
      await this.completeAbandoned();
      waiting = await unapplied(waiting);
      if (waiting.length === 0) return;
    }
    log(
      `${waiting.length} write(s) by ${processes()} still neither applied nor completed ` +
        `after ${3 * deadAfterMs} ms: reading the engine all the same`,
    );
  }

  /** One run at a time in a process: two would each find their own claim on an intent and both send it. */
  completeAbandoned(): Promise<void> {
    this.completing ??= this.completeAbandonedNow().finally(() => {
      this.completing = undefined;
    });
    return this.completing;
  }

  private async completeAbandonedNow(): Promise<void> {
    const { deadAfterMs } = this.options;
    const seen = await lastSeen(this.engine);
    const deadBefore = Date.now() - deadAfterMs;
    const isDead = (name: string) => {
      const { process, startedAt } = processOf(name);
      return (seen.get(process) ?? startedAt) < deadBefore;
    };
    const dead = new Set<string>();
    const abandoned = (intent: string) => {
      if (this.intents.isOwn(intent) || !isDead(intent)) return false;
      dead.add(processOf(intent).process);
      return true;
    };
    const completed = await this.completion.completeIntents(abandoned, (intent) =>
      this.completion.claim(intent, isDead),
    );
    if (completed > 0)
      this.options.log(
        `completed ${completed} write(s) left by ${dead.size} process(es) not seen for ${deadAfterMs} ms: ` +
          [...dead].join(', '),
      );
  }

  /** Removes applied intents, feed entries and liveness records older than `retentionMs`, from time to time. */
  scheduleTrim(): void {
    if (this.stopped) return;
    const { retentionMs, log } = this.options;
    this.trimTimer = setTimeout(
      () => {
        Promise.resolve()
          .then(() => this.completion.removeApplied())
          .then(() => updateRetried(this.engine, feedTrim(new Date(Date.now() - retentionMs))))
          .then(() => updateRetried(this.engine, livenessTrim(new Date(Date.now() - retentionMs))))
          .catch((err: unknown) => log(`removing old commit feed entries failed: ${messageOf(err)}`))
          .finally(() => this.scheduleTrim());
      },
      Math.min(FEED_TRIM_EVERY_MS, retentionMs / 2),
    );
    this.trimTimer.unref();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.trimTimer);
    clearTimeout(this.livenessTimer);
  }
}
