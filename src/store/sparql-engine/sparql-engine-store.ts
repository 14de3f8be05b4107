import { blankNode, iriToNt, isValidIri, namedNode, quad, termToNt, type Quad, type RDF } from '../../rdf/terms.js';
import { xsd } from '../../rdf/vocab.js';
import { Claims } from '../claims.js';
import { CommitStream } from '../commit-stream.js';
import type { GraphStore } from '../graph-store.js';
import type { SparqlJsonResults } from '../readers.js';
import { actionRequestFromTriples, type ActionRequestRecord } from '../schema/action-requests.js';
import { revisionGraph, type RevisionRecord } from '../schema/revisions.js';
import { storedDomainEvents } from '../schema/stored-events.js';
import { WriteTransaction, type DomainEvent } from '../transaction.js';
import { outboxEntryGraph } from '../schema/outbox.js';
import { EngineNotifications } from './engine-notifications.js';
import { readCreatedAndLatestRevisions, readFinishedRequests, readRevision, type CsvReader } from './engine-layout.js';
import { randomUUID } from 'node:crypto';
import { commitConditions, OUTBOX_KEY_PREFIX, type CommitCondition } from './commit-conditions.js';
import {
  CommitIntents,
  completerOf,
  completionClaim,
  completionClaimRemoval,
  failedCondition,
  highestClaimedNumber,
  INTENTS_REMOVED_TOGETHER,
  intentsRemoval,
  isStored,
  processOf,
  reportsInsert,
  storedIntentNames,
  storedIntents,
  type CommitIntent,
} from './commit-intents.js';
import {
  engineWrite,
  INLINE_QUADS,
  STAGED_SUBJECT,
  stagedWrite,
  stagingGraph,
  updateOperation,
  type EngineWrite,
} from './update-text.js';
import { EngineDeadlockError } from './sparql-client.js';
import { appliedIntents, feedEntryParts, feedStartPosition, feedTrim, type FeedEntryParts } from './commit-feed.js';
import { CommitFeedFollower } from './commit-feed-follower.js';
import { StoreConflictError, StoreUnavailableError } from '../errors.js';
import type { Lease } from '../lease.js';
import { EngineLease, type EngineLeaseOptions } from './engine-lease.js';
import { heartbeat, lastSeen, livenessTrim } from './process-liveness.js';
import { fromEngine, normalisedResults, readEngineNTriples, toEngine } from './engine-literals.js';

/** Tries of an update the engine rolled back to end a deadlock (the one it chose to lose), with a random pause growing by this much each time. */
const DEADLOCK_ATTEMPTS = 8;
const DEADLOCK_BACKOFF_MS = 20;

/** How long a commit whose answer was lost is sent again before it answers 503 (and is completed later), this often. */
const SETTLE_WAIT_MS = 5_000;
/** Tries of a commit whose notifications another process numbered alike first (each numbers them anew), and the pause before each, at most, times the try. */
const RENUMBER_ATTEMPTS = 10;
const RENUMBER_BACKOFF_MS = 10;
const SETTLE_POLL_MS = 250;

const outboxNumbers = (events: readonly DomainEvent[]) =>
  events.flatMap((e) => (e.kind === 'notification-queued' ? [e.entry.sequence] : []));

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** How often a process removes feed entries older than `retentionMs` (at most: twice per `retentionMs`). */
const FEED_TRIM_EVERY_MS = 60_000;

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

/** What the store needs of a SPARQL 1.1 engine (SparqlClient: the Protocol over HTTP). */
export interface SparqlEngine {
  select(query: string): Promise<SparqlJsonResults>;
  /** A SELECT answered as CSV, row by row: the start's large reads (engine-layout.ts). */
  selectCsv: CsvReader['selectCsv'];
  /** A CONSTRUCT's answer as N-Triples. */
  construct(query: string): Promise<string>;
  update(text: string): Promise<string>;
}

type Binding = SparqlJsonResults['results']['bindings'][number];
type BoundTerm = Binding[string];

/** A term of SPARQL JSON results as an RDF term, a literal in the embedded store's form. */
export function termOf(b: BoundTerm): RDF.Term {
  if (b.type === 'uri') return namedNode(b.value);
  if (b.type === 'bnode') return blankNode(b.value);
  return fromEngine(b.value, b.datatype, b['xml:lang']);
}

const tripleOf = (b: Binding): Quad =>
  quad(termOf(b.s) as Quad['subject'], termOf(b.p) as Quad['predicate'], termOf(b.o) as Quad['object']);

/**
 * The store on a SPARQL 1.1 engine (`store.backend: sparql`): every commit is one Update request,
 * which the engine applies atomically and keeps in its own transaction log (the durability: no
 * journal here); every read is a query. The claims of writes in flight and the after-commit stream
 * are this process's, as with the embedded store.
 */
export class SparqlEngineStore implements GraphStore {
  readonly claims = new Claims();
  readonly committed = new CommitStream();
  readonly receivedNotifications: EngineNotifications;
  private closed = false;
  private readonly intents = new CommitIntents();
  /** Set while a write whose answer was lost is being completed (see `complete`). */
  private unresolved: Promise<void> | undefined;
  /** The commits of other processes on the engine, when there are (`shared`). */
  private readonly follower: CommitFeedFollower | undefined;
  private trimTimer: NodeJS.Timeout | undefined;
  private livenessTimer: NodeJS.Timeout | undefined;
  private completing: Promise<void> | undefined;

  constructor(
    private readonly engine: SparqlEngine,
    /**
     * Other processes write to the engine too: new objects, changes and decisions are conditional
     * (commit-conditions.ts), and each commit is announced on the commit feed, which this process follows.
     */
    private readonly shared?: SharedWritersOptions,
  ) {
    this.receivedNotifications = new EngineNotifications(this, (graphs) => this.removeGraphs(graphs));
    this.follower =
      shared &&
      new CommitFeedFollower(this, {
        ...shared,
        isOwn: (intent) => this.intents.isOwn(intent),
        publish: (events) => this.committed.publishOthers(events),
      });
  }

  /**
   * Resolves once every commit any process on the engine acknowledged before the call is published
   * on `committed` here: a read after it sees them (read-your-writes across processes). Alone on the engine, at once.
   */
  async caughtUp(): Promise<void> {
    await this.follower?.caughtUp();
  }

  begin(quads?: { insert?: readonly Quad[]; delete?: readonly Quad[] }): WriteTransaction {
    return new WriteTransaction(this.claims, quads);
  }

  /**
   * One Update operation, stored first as the commit's intent (CommitIntents); once the engine
   * acknowledged the operation, the events are published and the claims released, in one tick.
   * When an answer is lost, the step is sent again until one comes: both are harmless to repeat.
   * If none comes within SETTLE_WAIT_MS, the write answers 503 and later writes are refused until
   * the engine answers again and the commit is completed (its events published then), so that
   * nothing is written on top of a state the indexes may not know.
   */
  async commit(tx: WriteTransaction): Promise<void> {
    try {
      if (this.closed) throw new StoreUnavailableError('the store is closed');
      if (this.unresolved)
        throw new StoreUnavailableError(
          'an earlier write is not confirmed by the SPARQL engine yet: writes wait until it answers again',
        );
      await this.apply(tx);
    } finally {
      tx.release();
    }
    this.removeIntents();
  }

  /**
   * Stores the intent of `tx` and applies it; numbers its notifications anew while another process
   * took a number first (a number given up is announced: `releaseNumbers`).
   */
  private async apply(tx: WriteTransaction): Promise<void> {
    /** Outbox numbers this commit took and gave up (see `releaseNumbers`). */
    const released: number[] = [];
    for (let attempt = 1; ; attempt++) {
      const iri = this.intents.nextIri();
      const feed = this.shared && tx.events.length > 0 ? feedEntryParts(iri, tx.events) : undefined;
      const prepared = await this.prepare(engineWrite(tx), feed);
      if (!prepared) return this.committed.publish(tx.events);
      try {
        await this.complete(
          { iri, update: prepared.apply },
          tx.events,
          prepared.staging,
          this.shared ? commitConditions(tx.events) : [],
        );
        this.releaseNumbers(released);
        return;
      } catch (err) {
        const numbers = outboxNumbers(tx.events);
        // Another process numbered a notification alike: numbered again, once this process knows the numbers taken.
        if (
          err instanceof StoreConflictError &&
          err.slot === 'outbox' &&
          tx.renumberOutbox &&
          attempt < RENUMBER_ATTEMPTS
        ) {
          released.push(...numbers.filter((n) => outboxEntryGraph(n) !== err.resource));
          // The numbers written (learnt from the feed) and those claimed by writes under way; after a
          // pause of random length, so that writers who collided do not collide again.
          await pause(Math.random() * RENUMBER_BACKOFF_MS * attempt);
          await this.caughtUp();
          tx.renumberOutbox(await highestClaimedNumber(this, OUTBOX_KEY_PREFIX));
          continue;
        }
        // Refused, nothing applied (a commit whose answer is lost may still be completed: its numbers stay taken).
        if (!(err instanceof StoreUnavailableError)) released.push(...numbers);
        this.releaseNumbers(released);
        throw err;
      }
    }
  }

  /**
   * Stores `intent` (if its `conditions` hold: else StoreConflictError), applies it, publishes
   * `events`. A refusal of the engine (nothing applied) ends it with the error; an engine that does
   * not answer within SETTLE_WAIT_MS too, and the commit is then completed in the background
   * (`unresolved`).
   */
  private async complete(
    intent: CommitIntent,
    events: readonly DomainEvent[],
    staging: readonly string[],
    conditions: readonly CommitCondition[],
  ): Promise<void> {
    const steps = async () => {
      const recorded = await this.update(this.intents.recording(intent, conditions));
      // Sent again after a lost answer, the recording finds its own claims: the stored intent tells;
      // or it finds its own commit applied and the intent removed, by a process that took this one
      // for dead (paused longer than deadAfterMs): then it is done.
      if (conditions.length > 0 && !reportsInsert(recorded) && !(await isStored(this, intent))) {
        if (!this.shared || (await appliedIntents(this, [intent.iri])).size === 0) {
          const failed = (await failedCondition(this, conditions, intent)) ?? conditions[0];
          throw new StoreConflictError(failed.slot, failed.resource);
        }
      } else await this.update(intent.update);
      this.intents.settled(intent);
      this.committed.publish(events);
      if (staging.length > 0) await this.removeGraphs(staging).catch(() => undefined);
    };
    for (const started = Date.now(); ; await pause(SETTLE_POLL_MS)) {
      try {
        return await steps();
      } catch (err) {
        if (!(err instanceof StoreUnavailableError)) {
          await this.update(intentsRemoval([intent.iri])).catch(() => undefined);
          if (staging.length > 0) await this.removeGraphs(staging).catch(() => undefined);
          throw err;
        }
        if (Date.now() - started >= SETTLE_WAIT_MS) {
          this.unresolved = this.completeLater(steps).finally(() => (this.unresolved = undefined));
          throw err;
        }
      }
    }
  }

  private async completeLater(steps: () => Promise<void>): Promise<void> {
    while (!this.closed) {
      try {
        return await steps();
      } catch (err) {
        // Refused now: it was not applied before either (a refused operation is rolled back whole).
        if (!(err instanceof StoreUnavailableError)) return;
        await pause(SETTLE_POLL_MS);
      }
    }
  }

  /**
   * Tells the other processes on the engine, by a commit of its own (a feed entry, nothing else),
   * that `numbers` will not be written, so their delivery need not wait for them
   * (store.sparql.feedGapWaitMillis). In the background: should it fail, they wait.
   */
  private releaseNumbers(numbers: readonly number[]): void {
    if (!this.shared || numbers.length === 0) return;
    const tx = this.begin();
    tx.events.push({ kind: 'outbox-numbers-released', numbers });
    this.commit(tx).catch((err: unknown) =>
      this.shared!.log(`announcing unused outbox numbers failed: ${(err as Error).message}`),
    );
  }

  /** Removes the intents of applied commits, a batch at a time, after the commit that completed one. */
  private removeIntents(): void {
    const iris = this.intents.removable();
    if (!iris) return;
    this.update(intentsRemoval(iris)).catch(() => this.intents.restore(iris));
  }

  /**
   * The operation applying `write` and writing its `feed` entry: its quads inline when few, else
   * staged first (stagedWrite) and applied by one operation of constant size; undefined when it
   * changes nothing.
   */
  private async prepare(
    write: EngineWrite,
    feed: FeedEntryParts | undefined,
  ): Promise<{ apply: string; staging: string[] } | undefined> {
    const quads = write.insert.length + write.remove.length;
    if (quads <= INLINE_QUADS) {
      const text = updateOperation(write.remove, write.insert, write.removedGraphs, feed);
      return text ? { apply: text, staging: [] } : undefined;
    }
    const id = randomUUID();
    const staging = [stagingGraph(id, 'insert'), stagingGraph(id, 'delete')];
    const { stage, apply } = stagedWrite(write, id, feed);
    try {
      for (const part of stage) await this.update(part);
    } catch (err) {
      await this.removeGraphs(staging).catch(() => undefined);
      throw err;
    }
    return { apply, staging };
  }

  /**
   * Completes what a crash cut off: sends the stored intents `of` selects again, oldest first (a
   * refused one changed nothing, then or now), then removes them. Alone on the engine, every one, at
   * start, before anything is read. With other processes, those of dead ones (`completeAbandoned`),
   * only those not applied yet (commit-feed.ts, `appliedIntents`) and only those this process may
   * `complete` (one process at a time: `claimCompletion`); an unapplied one holds its slots, so no
   * later write of another process touched what it writes. Removes those applied and those it sent.
   */
  async completeIntents(
    of: (intent: string) => boolean = () => true,
    complete?: (intent: string) => Promise<boolean>,
  ): Promise<number> {
    const stored = (await storedIntents(this.engine)).filter((i) => of(i.iri));
    const applied = this.shared
      ? await appliedIntents(
          this,
          stored.map((i) => i.iri),
        )
      : new Set<string>();
    const sent: string[] = [];
    for (const intent of stored) {
      if (applied.has(intent.iri) || (complete && !(await complete(intent.iri)))) continue;
      await this.update(intent.update).catch((err: unknown) => {
        if (err instanceof StoreUnavailableError) throw err;
      });
      sent.push(intent.iri);
    }
    await this.removeIntentsNamed([...applied, ...sent]);
    return sent.length;
  }

  /**
   * Whether this process completes `intent`: it claims it now, or did before (an attempt cut short);
   * the claim of a completer that `isDead` is taken over. Sent by two processes at once, an
   * operation could apply twice, the second time over a later write of a third process to what it
   * does not claim (a queue position that a rewind lowered, say).
   */
  private async claimCompletion(intent: string, isDead: (process: string) => boolean): Promise<boolean> {
    const own = this.intents.process;
    for (let attempt = 1; attempt <= 2; attempt++) {
      if (reportsInsert(await this.update(completionClaim(intent, own)))) return true;
      const completer = await completerOf(this.engine, intent);
      // None: the intent is gone (applied and removed by another process).
      if (completer === own) return true;
      if (completer === undefined || !isDead(completer)) return false;
      await this.update(completionClaimRemoval(intent, completer));
    }
    return false;
  }

  /**
   * Removes the stored intents, of every process, whose commits are applied (`appliedIntents`): a
   * process removes its own in batches, and one that died leaves its last ones; removed while their
   * feed entries are kept, they are never taken for unapplied ones.
   */
  private async removeAppliedIntents(): Promise<void> {
    await this.removeIntentsNamed([...(await appliedIntents(this, [...(await storedIntentNames(this.engine))]))]);
  }

  private async removeIntentsNamed(iris: readonly string[]): Promise<void> {
    for (let from = 0; from < iris.length; from += INTENTS_REMOVED_TOGETHER)
      await this.update(intentsRemoval(iris.slice(from, from + INTENTS_REMOVED_TOGETHER)));
  }

  private async removeGraphs(graphs: readonly string[]): Promise<void> {
    await this.update(updateOperation([], [], graphs));
  }

  /** Removes the staging graphs of writes that never applied them (a crash between their parts). */
  async removeLeftoverStaging(): Promise<number> {
    const rows = await this.engine.select(`SELECT DISTINCT ?g WHERE { GRAPH ?g { ?q ${iriToNt(STAGED_SUBJECT)} ?s } }`);
    const graphs = rows.results.bindings.map((b) => b.g.value);
    if (graphs.length > 0) await this.removeGraphs(graphs);
    return graphs.length;
  }

  /** Sends an update, again after a deadlock; answers the engine's answer. */
  private async update(text: string): Promise<string> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.engine.update(text);
      } catch (err) {
        if (!(err instanceof EngineDeadlockError) || attempt >= DEADLOCK_ATTEMPTS) throw err;
        await pause(Math.random() * DEADLOCK_BACKOFF_MS * attempt);
      }
    }
  }

  /** Literals in the answer as the embedded store would give them (engine-literals.ts). */
  async select(sparql: string): Promise<SparqlJsonResults> {
    return normalisedResults(await this.engine.select(sparql));
  }

  /** As N-Triples, which cost Virtuoso half the CPU of the same triples as SPARQL JSON results (measured: 2.2-2.9 against 4.9-5.7 ms for 51 triples). */
  async graphTriples(graph: string): Promise<Quad[]> {
    // No graph can be named so (an id from a client, say): nothing to ask.
    if (!isValidIri(graph)) return [];
    return readEngineNTriples(
      await this.engine.construct(`CONSTRUCT { ?s ?p ?o } WHERE { GRAPH ${iriToNt(graph)} { ?s ?p ?o } }`),
    );
  }

  /** The triples of every graph `?g` that the pattern `where` binds, by graph, in one query. */
  async triplesByGraph(where: string): Promise<Map<string, Quad[]>> {
    const rows = await this.engine.select(`SELECT ?g ?s ?p ?o WHERE { ${where} GRAPH ?g { ?s ?p ?o } }`);
    const byGraph = new Map<string, Quad[]>();
    for (const b of rows.results.bindings) {
      let triples = byGraph.get(b.g.value);
      if (!triples) byGraph.set(b.g.value, (triples = []));
      triples.push(tripleOf(b));
    }
    return byGraph;
  }

  revision(object: string, number: number): Promise<RevisionRecord | undefined> {
    return readRevision(this, revisionGraph(object, number));
  }

  /** Read from its graph: a request the index does not hold is finished, or unknown. */
  async finishedRequest(iri: string): Promise<ActionRequestRecord | undefined> {
    return actionRequestFromTriples(iri, await this.graphTriples(iri));
  }

  finishedRequests(object?: string): Promise<ActionRequestRecord[]> {
    return readFinishedRequests(this, object);
  }

  /**
   * As the engine keeps them: a VALUES clause gives the lexical form a stored literal reads back
   * with (Virtuoso gives a boolean's there as an integer: the datatype asked for is kept).
   */
  async canonicalLiterals(literals: readonly RDF.Literal[]): Promise<RDF.Literal[]> {
    const out = [...literals];
    const asked = out.map((l, i) => [l, i] as const).filter(([l]) => !this.keepsAsWritten(l));
    if (asked.length === 0) return out;
    const rows = await this.engine.select(
      `SELECT ?i ?v WHERE { VALUES (?i ?v) { ${asked.map(([l, i]) => `(${i} ${termToNt(toEngine(l))})`).join(' ')} } }`,
    );
    for (const b of rows.results.bindings) {
      const i = Number(b.i.value);
      out[i] = fromEngine(b.v.value, literals[i].datatype.value, literals[i].language || undefined);
    }
    return out;
  }

  /** Plain strings only: the engine may write any other literal back in a form of its own. */
  keepsAsWritten(literal: RDF.Literal): boolean {
    return literal.datatype.value === xsd.string && literal.language === '';
  }

  /** Publishes the domain events that rebuild what consumers keep, from what the engine holds: once, at start. */
  async publishStored(): Promise<void> {
    let next = 0;
    if (this.shared) {
      // Seen alive from the start: its claims on completing dead processes' writes (below) hold
      // only while it is, and waiting for writes under way may take longer than deadAfterMs.
      this.scheduleLiveness(this.shared);
      // Only what dead processes left: a live one's write under way is its own to complete (sent and
      // removed here, its claims would be free before it is applied), and so are its staged parts.
      await this.completeAbandoned(this.shared);
      // The feed is followed from the first position not yet taken. An operation takes its position
      // while it runs and becomes visible when it commits, maybe after the state below is read: so
      // the position is read before the writes under way are awaited, and every operation that
      // took a lower one (its intent stored before) is applied, or given up, before the state is
      // read. A commit made meanwhile is published again from the feed (a no-op for consumers).
      next = await feedStartPosition(this);
      await this.awaitWritesUnderWay(this.shared);
    } else {
      await this.completeIntents();
      await this.removeLeftoverStaging();
    }
    this.committed.publish(await storedDomainEvents(this, await readCreatedAndLatestRevisions(this.engine)));
    if (this.shared) {
      this.follower!.start(next);
      this.scheduleTrim(this.shared);
    }
  }

  /**
   * Every fifth of `deadAfterMs`, records that this process is alive; every other time, completes
   * the intents of processes not seen for `deadAfterMs` (killed with a write stored, not applied:
   * its slots held until then). One process at a time completes an intent (`claimCompletion`),
   * and holds it while seen alive: so the record goes on while a completion waits for the engine.
   */
  private scheduleLiveness(shared: SharedWritersOptions, tick = 0): void {
    if (this.closed) return;
    this.livenessTimer = setTimeout(
      () => {
        if (tick % 2 === 1)
          this.completeAbandoned(shared).catch((err: unknown) =>
            shared.log(`completing the writes of dead processes failed: ${(err as Error).message}`),
          );
        this.update(heartbeat(this.intents.process, new Date()))
          .catch((err: unknown) => shared.log(`recording this process as alive failed: ${(err as Error).message}`))
          .finally(() => this.scheduleLiveness(shared, tick + 1));
      },
      tick === 0 ? 0 : shared.deadAfterMs / 5,
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
  private async awaitWritesUnderWay(shared: SharedWritersOptions): Promise<void> {
    const unapplied = async (among?: readonly string[]) => {
      const stored = [...(await storedIntentNames(this.engine, among))];
      const applied = await appliedIntents(this, stored);
      return stored.filter((i) => !applied.has(i));
    };
    let waiting = await unapplied();
    if (waiting.length === 0) return;
    const processes = () => [...new Set(waiting.map((i) => processOf(i).process))].join(', ');
    shared.log(`waiting for ${waiting.length} write(s) under way by ${processes()} before reading the engine`);
    for (const deadline = Date.now() + 3 * shared.deadAfterMs; Date.now() < deadline; ) {
      await new Promise((resolve) => setTimeout(resolve, shared.deadAfterMs / 20));
      await this.completeAbandoned(shared);
      waiting = await unapplied(waiting);
      if (waiting.length === 0) return;
    }
    shared.log(
      `${waiting.length} write(s) by ${processes()} still neither applied nor completed after ${3 * shared.deadAfterMs} ms: reading the engine all the same`,
    );
  }

  /** One run at a time in a process: two would each find their own claim on an intent and both send it. */
  private completeAbandoned(shared: SharedWritersOptions): Promise<void> {
    this.completing ??= this.completeAbandonedNow(shared).finally(() => (this.completing = undefined));
    return this.completing;
  }

  private async completeAbandonedNow(shared: SharedWritersOptions): Promise<void> {
    const seen = await lastSeen(this.engine);
    const deadBefore = Date.now() - shared.deadAfterMs;
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
    const completed = await this.completeIntents(abandoned, (intent) => this.claimCompletion(intent, isDead));
    if (completed > 0)
      shared.log(
        `completed ${completed} write(s) left by ${dead.size} process(es) not seen for ${shared.deadAfterMs} ms: ${[...dead].join(', ')}`,
      );
  }

  private scheduleTrim(shared: SharedWritersOptions): void {
    if (this.closed) return;
    this.trimTimer = setTimeout(
      () => {
        Promise.resolve()
          .then(() => this.removeAppliedIntents())
          .then(() => this.update(feedTrim(new Date(Date.now() - shared.retentionMs))))
          .then(() => this.update(livenessTrim(new Date(Date.now() - shared.retentionMs))))
          .catch((err: unknown) => shared.log(`removing old commit feed entries failed: ${(err as Error).message}`))
          .finally(() => this.scheduleTrim(shared));
      },
      Math.min(FEED_TRIM_EVERY_MS, shared.retentionMs / 2),
    );
    this.trimTimer.unref();
  }

  /** A lease among the processes on the engine (`name`: what it covers). */
  lease(name: string, options: EngineLeaseOptions): Lease {
    return new EngineLease(this.engine, name, options);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.follower?.stop();
    clearTimeout(this.trimTimer);
    clearTimeout(this.livenessTimer);
  }
}
