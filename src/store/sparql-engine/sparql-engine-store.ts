import { randomUUID } from 'node:crypto';
import { iriToNt, isValidIri, type Quad, type RDF, termToNt } from '../../rdf/terms.js';
import { xsd } from '../../rdf/vocab.js';
import { Claims } from '../claims.js';
import { CommitStream } from '../commit-stream.js';
import { StoreConflictError, StoreFailedError, StoreUnavailableError } from '../errors.js';
import type { GraphStore } from '../graph-store.js';
import type { Lease } from '../lease.js';
import type { SparqlJsonResults } from '../readers.js';
import { type ActionRequestRecord, actionRequestFromTriples } from '../schema/action-requests.js';
import { outboxEntryGraph } from '../schema/outbox.js';
import { type RevisionRecord, revisionGraph } from '../schema/revisions.js';
import { storedDomainEvents } from '../schema/stored-events.js';
import { SparqlStoredEvents } from '../schema/events.js';
import { type DomainEvent, WriteTransaction } from '../transaction.js';
import { type CommitCondition, commitConditions, OUTBOX_KEY_PREFIX } from './commit-conditions.js';
import {
  appliedIntents,
  type FeedEntryParts,
  feedEntryParts,
  feedEntryPattern,
  feedStartPosition,
} from './commit-feed.js';
import { CommitFeedFollower } from './commit-feed-follower.js';
import {
  type CommitIntent,
  CommitIntents,
  failedCondition,
  highestClaimedNumber,
  intentsNaming,
  intentsRemoval,
  isStored,
  reportsInsert,
  reportsUnmatched,
  answerLines,
} from './commit-intents.js';
import { pause, type SparqlEngine, updateRetried } from './engine.js';
import { readFinishedRequests, readRevision } from './engine-layout.js';
import { EngineObjectCatalog } from './engine-object-catalog.js';
import { EngineLease, type EngineLeaseOptions } from './engine-lease.js';
import { LeaseShare } from './lease-share.js';
import { fromEngine, normalisedResults, readEngineNTriples, toEngine, tripleOfBinding } from './engine-literals.js';
import { EngineNotifications } from './engine-notifications.js';
import { RequestBatches } from './request-batches.js';
import { fromRevisionSubjects } from '../schema/revision-subjects.js';
import { IntentCompletion } from './intent-completion.js';
import { type SharedWritersOptions, SharedWritersUpkeep } from './shared-writers.js';
import {
  dataOperations,
  feedOperations,
  type EngineWrite,
  engineWrite,
  INLINE_QUADS,
  STAGED_SUBJECT,
  stagedWrite,
  stagingGraph,
  updateOperation,
} from './update-text.js';
import { entryOf } from '../../map-entry.js';

/** How long a commit whose answer was lost is sent again before it answers 503 (and is completed later), this often. */
const SETTLE_WAIT_MS = 5_000;
/**
 * Tries of a commit whose notifications another process numbered alike first (each numbers them anew), and the pause
 * before each, at most, times the try.
 */
const RENUMBER_ATTEMPTS = 10;
const RENUMBER_BACKOFF_MS = 10;
const SETTLE_POLL_MS = 250;
/** How long a closing process waits for the engine to remove its applied commits' intents. */
const CLOSING_REMOVAL_WAIT_MS = 2_000;

/**
 * Commits' recordings, and their operations, sent while this many of the kind are with the engine wait, then go
 * together, this many in one request at most (one operation each, separated by `;`): Virtuoso's cost of an update
 * request is mostly its own (docs/sparql-engine.md, "Write cost").
 */
const UPDATES_IN_FLIGHT = 2;
const UPDATES_PER_REQUEST = 20;
/**
 * Operations up to this long go with others; longer ones (a large creation, a bulk of events short of staging) go
 * alone, at once: untried together. A PATCH's (two changed values of an object of ~50) costs Virtuoso less with others
 * than alone (docs/sparql-engine.md, "Write cost").
 */
const OPERATION_CHARS_TOGETHER = 40_000;

const outboxNumbers = (events: readonly DomainEvent[]) =>
  events.flatMap((e) => (e.kind === 'notification-queued' ? [e.entry.sequence] : []));

/** A write made ready to send (`prepare`). */
interface PreparedWrite {
  /** The whole write as one text: what its intent stores, and what a process completing it sends. */
  apply: string;
  /** Sent first by its own process, in a request of its own (feedOperations); then `operation`. */
  ahead?: string;
  operation: string;
  /** Graphs of a large write's quads, removed once it is applied or refused (stagedWrite). */
  staging: string[];
  /** Graphs `ahead` creates: removed again if the engine refuses the write. */
  created: string[];
}

/**
 * The store on a SPARQL 1.1 engine (`store.backend: sparql`): every commit stores its intent, then sends its update,
 * completed from the intent when its answer is lost; the engine keeps both in its own transaction log (the
 * durability: no journal here); every read is a query. The claims of writes in flight and the after-commit stream
 * are this process's, as with the embedded store.
 */
export class SparqlEngineStore implements GraphStore {
  readonly claims = new Claims();
  readonly committed = new CommitStream();
  readonly receivedNotifications: EngineNotifications;
  readonly logisticsEvents = new SparqlStoredEvents(this);
  readonly objectCatalog = new EngineObjectCatalog({
    select: (query) => this.select(query),
    construct: async (query) => readEngineNTriples(await this.engine.construct(query)),
    update: (text) => this.update(text),
  });
  private closed = false;
  private readonly intents = new CommitIntents();
  private readonly recordings = new RequestBatches<string, string>(
    (texts) => this.updateTogether(texts, true),
    UPDATES_IN_FLIGHT,
    UPDATES_PER_REQUEST,
  );
  private readonly operations = new RequestBatches<string, string>(
    (texts) => this.updateTogether(texts, false),
    UPDATES_IN_FLIGHT,
    UPDATES_PER_REQUEST,
  );
  /** Set while a write whose answer was lost is being completed (see `complete`). */
  private unresolved: Promise<void> | undefined;
  /** The commits of other processes on the engine, when there are (`shared`). */
  private readonly follower: CommitFeedFollower | undefined;
  private readonly completion: IntentCompletion;
  /** With other processes on the engine: liveness, their abandoned writes, trimming the feed. */
  private readonly upkeep: SharedWritersUpkeep | undefined;

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
    this.completion = new IntentCompletion(engine, this, this.intents.process, shared !== undefined);
    this.upkeep = shared && new SharedWritersUpkeep(engine, this, this.intents, this.completion, shared);
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
   * One Update operation, stored first as the commit's intent; once acknowledged, events are published and claims
   * released in one tick. A lost answer is sent again (harmless); past SETTLE_WAIT_MS the write answers 503 and
   * later writes are refused until the commit completes, so nothing lands on a state the indexes may not know
   * (docs/sparql-engine.md, "How the server uses the engine").
   */
  async commit(tx: WriteTransaction): Promise<void> {
    try {
      if (this.closed) throw new StoreUnavailableError('the store is closed');
      if (this.unresolved !== undefined)
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
          { iri, update: prepared.apply, graphs: tx.revisions.map((r) => r.revision.graph) },
          tx.events,
          prepared,
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
    { staging, ahead, operation, created }: PreparedWrite,
    conditions: readonly CommitCondition[],
  ): Promise<void> {
    const guarded = conditions.length > 0 || this.shared !== undefined;
    /** Once known stored, the intent is not sent again: a completer may have applied and removed it meanwhile. */
    let recorded = false;
    const steps = async () => {
      if (!recorded) {
        const answer = await this.recordings.get(
          this.intents.recording(intent, conditions, this.shared && feedEntryPattern(intent.iri)),
        );
        // Sent again after a lost answer, the recording finds its own claims: the stored intent tells;
        // or it finds its own commit applied and the intent removed, by a process that took this one
        // for dead (paused longer than deadAfterMs): then it is done.
        recorded = !guarded || reportsInsert(answer) || (await isStored(this, intent));
        if (!recorded && (!this.shared || !(await this.isApplied(intent)))) {
          const failed = (await failedCondition(this, conditions, intent)) ?? conditions[0];
          throw new StoreConflictError(failed.slot, failed.resource);
        }
      }
      if (recorded) {
        // Alone with other processes: several of their operations in one request lost notifications in
        // test/engine-delivery-groups.test.ts (the cause not found), and each needs its own answer there.
        const together = !this.shared && operation.length <= OPERATION_CHARS_TOGETHER;
        // In a request of its own: with the rest in one, it held its locks while the rest waited on others'.
        if (ahead) await this.operations.get(ahead);
        const answer = await (together ? this.operations.get(operation) : this.update(operation));
        // Changes nothing once a process that took this one for dead took the intent over (ownerGate): done once
        // that process applied it.
        if (this.shared && reportsUnmatched(answer) && !(await this.isApplied(intent)))
          throw new StoreUnavailableError('this write is being completed by another server process');
      }
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
          // Refused once recorded: its slots were its own, so were the graphs it created.
          const left = [...staging, ...(recorded ? created : [])];
          if (left.length > 0) await this.removeGraphs(left).catch(() => undefined);
          throw err;
        }
        if (Date.now() - started >= SETTLE_WAIT_MS) {
          this.unresolved = this.completeLater(steps).finally(() => {
            this.unresolved = undefined;
          });
          throw err;
        }
      }
    }
  }

  private async isApplied(intent: CommitIntent): Promise<boolean> {
    return (await appliedIntents(this, [intent.iri])).size > 0;
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
   * The operation applying `write` and writing its `feed` entry: its quads inline when few (with a feed entry, the
   * graphs it creates ahead: feedOperations), else staged first (stagedWrite) and applied by one operation of
   * constant size; undefined when it changes nothing.
   */
  private async prepare(write: EngineWrite, feed: FeedEntryParts | undefined): Promise<PreparedWrite | undefined> {
    const quads = write.insert.length + write.remove.length;
    if (quads <= INLINE_QUADS) {
      if (feed) {
        const { ahead, rest } = feedOperations(write, feed);
        const apply = [ahead, rest].filter(Boolean).join(' ;\n');
        return { apply, ahead, operation: rest, staging: [], created: ahead ? [...write.created] : [] };
      }
      // Removed graphs are matched: that needs a template.
      const text =
        write.removedGraphs.length > 0
          ? updateOperation(write.remove, write.insert, write.removedGraphs)
          : dataOperations(write);
      return text ? { apply: text, operation: text, staging: [], created: [] } : undefined;
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
    return { apply, operation: apply, staging, created: [] };
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

  /**
   * Sends `texts` (one operation each) in one request; answers each its own line of the engine's answer where
   * `ownLines` and the answer has one per operation (a recording writes one graph), else the whole answer: one that
   * reads as done for one operation reads so for all, and a recording given an answer that does not tell is read back.
   * Sent again as a whole after a deadlock, as a commit's own request would be: each operation is harmless sent twice.
   * Refused, the operations before the refused one stay applied (docs/sparql-engine.md, "What the engine
   * guarantees"): each is sent again on its own, so each commit learns its own outcome.
   */
  private async updateTogether(texts: string[], ownLines: boolean): Promise<(string | Error)[]> {
    if (texts.length === 1) return [await this.update(texts[0])];
    let answer: string;
    try {
      answer = await this.update(texts.join(' ;\n'));
    } catch (err) {
      if (!(err instanceof StoreFailedError)) throw err;
      const answers: (string | Error)[] = [];
      for (const text of texts) answers.push(await this.update(text).catch((refused: Error) => refused));
      return answers;
    }
    const lines = ownLines ? answerLines(answer, texts.length) : undefined;
    return texts.map((_, i) => lines?.[i] ?? (ownLines ? '' : answer));
  }

  /** Sends an update, again after a deadlock; answers the engine's answer. */
  private update(text: string): Promise<string> {
    return updateRetried(this.engine, text);
  }

  /** Literals in the answer as the embedded store would give them (engine-literals.ts). */
  async select(sparql: string): Promise<SparqlJsonResults> {
    return normalisedResults(await this.engine.select(sparql));
  }

  /**
   * As N-Triples, which cost Virtuoso about half the CPU of the same triples as SPARQL JSON results; a revision's with
   * its embedded nodes named as the domain wrote them (revision-subjects.ts).
   */
  async graphTriples(graph: string): Promise<Quad[]> {
    // No graph can be named so (an id from a client, say): nothing to ask.
    if (!isValidIri(graph)) return [];
    const triples = readEngineNTriples(
      await this.engine.construct(`CONSTRUCT { ?s ?p ?o } WHERE { GRAPH ${iriToNt(graph)} { ?s ?p ?o } }`),
    );
    return fromRevisionSubjects(triples, graph);
  }

  /** The triples of every graph `?g` that the pattern `where` binds, by graph, in one query. */
  async triplesByGraph(where: string): Promise<Map<string, Quad[]>> {
    const rows = await this.engine.select(`SELECT ?g ?s ?p ?o WHERE { ${where} GRAPH ?g { ?s ?p ?o } }`);
    const byGraph = new Map<string, Quad[]>();
    for (const b of rows.results.bindings) {
      entryOf(byGraph, b.g.value, () => []).push(tripleOfBinding(b));
    }
    return byGraph;
  }

  revision(object: string, number: number): Promise<RevisionRecord | undefined> {
    return readRevision(this, revisionGraph(object, number));
  }

  /**
   * A revision's graph that a cut operation did not write (docs/sparql-engine.md, "Known limits"): its stored intent
   * is sent again by this process, as a completer does (claimed, taken over from its process), so a read of it need
   * not wait for its process to be taken for dead.
   */
  async completeWriteOf(graph: string): Promise<void> {
    const writing = await intentsNaming(this, graph);
    if (writing.size === 0) return;
    await this.completion.completeIntents(
      (intent) => writing.has(intent),
      (intent) => this.completion.claim(intent, () => false),
    );
    if ((await this.graphTriples(graph)).length === 0)
      throw new StoreUnavailableError('the write of this revision is being completed by another server process');
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
    if (this.upkeep) {
      // Seen alive from the start: its claims on completing dead processes' writes (below) hold
      // only while it is, and waiting for writes under way may take longer than deadAfterMs.
      this.upkeep.scheduleLiveness();
      // Only what dead processes left: a live one's write under way is its own to complete (sent and
      // removed here, its claims would be free before it is applied), and so are its staged parts.
      await this.upkeep.completeAbandoned();
      // The feed is followed from the first position not yet taken. An operation takes its position
      // while it runs and becomes visible when it commits, maybe after the state below is read: so
      // the position is read before the writes under way are awaited, and every operation that
      // took a lower one (its intent stored before) is applied, or given up, before the state is
      // read. A commit made meanwhile is published again from the feed (a no-op for consumers).
      next = await feedStartPosition(this);
      await this.upkeep.awaitWritesUnderWay();
    } else {
      await this.completion.completeIntents();
      await this.removeLeftoverStaging();
    }
    await this.objectCatalog.upgradeLayout();
    // Objects are not among them: the domain asks the catalog for those it needs.
    this.committed.publish(await storedDomainEvents(this, []));
    if (this.upkeep) {
      this.follower?.start(next);
      this.upkeep.scheduleTrim();
    }
  }

  /**
   * `count` leases among the processes on the engine (`name`: what they cover), which the processes share out: each
   * takes up to its fair share of them (LeaseShare). One lease is held by whichever process takes it.
   */
  leases(name: string, count: number, options: EngineLeaseOptions): Lease[] {
    if (count === 1) return [new EngineLease(this.engine, name, options)];
    const deadAfterMs = this.shared?.deadAfterMs ?? options.termMs;
    const share = new LeaseShare(this.engine, count, deadAfterMs, options.termMs / 5);
    return Array.from(
      { length: count },
      (_, i) => new EngineLease(this.engine, `${name}:${i}/${count}`, { ...options, share }),
    );
  }

  async close(): Promise<void> {
    this.closed = true;
    this.follower?.stop();
    this.upkeep?.stop();
    // A start sends every stored intent again: removed now, those of applied commits leave the next start of a
    // process stopped cleanly nothing to send (docs/sparql-engine.md, "What the start reads"). Should the engine
    // not answer soon, the process stops all the same and that start sends them again, which is harmless.
    const applied = this.intents.takeApplied();
    if (applied.length > 0)
      await Promise.race([this.update(intentsRemoval(applied)).catch(() => undefined), pause(CLOSING_REMOVAL_WAIT_MS)]);
  }
}
