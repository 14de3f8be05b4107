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
import { EngineNotifications } from './engine-notifications.js';
import { readCreatedAndLatestRevisions, readFinishedRequests, readRevision } from './engine-layout.js';
import { randomUUID } from 'node:crypto';
import { CommitMarks, type CommitMark } from './commit-marks.js';
import { engineWrite, INLINE_QUADS, STAGED_SUBJECT, stagedWrite, stagingGraph, updateOperation, type EngineWrite } from './update-text.js';
import { EngineDeadlockError } from './sparql-client.js';
import { StoreUnavailableError } from '../errors.js';
import { fromEngine, normalisedResults, toEngine } from './engine-literals.js';

/** Tries of an update the engine rolled back to end a deadlock (the one it chose to lose), with a random pause growing by this much each time. */
const DEADLOCK_ATTEMPTS = 8;
const DEADLOCK_BACKOFF_MS = 20;

/** How long a commit whose answer was lost waits to learn whether it was applied, asking this often. */
const SETTLE_WAIT_MS = 5_000;
const SETTLE_POLL_MS = 250;

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** What the store needs of a SPARQL 1.1 engine (SparqlClient: the Protocol over HTTP). */
export interface SparqlEngine {
  select(query: string): Promise<SparqlJsonResults>;
  update(text: string): Promise<string>;
}

type Binding = SparqlJsonResults['results']['bindings'][number];
type BoundTerm = Binding[string];

/** A term of SPARQL JSON results as an RDF term. */
function termOf(b: BoundTerm): RDF.Term {
  if (b.type === 'uri') return namedNode(b.value);
  if (b.type === 'bnode') return blankNode(b.value);
  return fromEngine(b.value, b.datatype, b['xml:lang']);
}

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
  private readonly marks = new CommitMarks();
  /** Set while a write whose answer was lost is not known to be applied or not (see `settle`). */
  private unresolved: Promise<void> | undefined;

  constructor(private readonly engine: SparqlEngine) {
    this.receivedNotifications = new EngineNotifications(this, (graphs) => this.removeGraphs(graphs));
  }

  begin(quads?: { insert?: readonly Quad[]; delete?: readonly Quad[] }): WriteTransaction {
    return new WriteTransaction(this.claims, quads);
  }

  /**
   * One Update operation; once the engine acknowledged it, the events are published and the claims
   * released, in one tick. An operation the engine rolled back to end a deadlock is sent again.
   * When the answer is lost, the commit's mark tells whether it was applied (CommitMarks): if it
   * cannot be told yet, writes are refused (503) until it can, so that nothing is written on top
   * of a state the indexes may not know.
   */
  async commit(tx: WriteTransaction): Promise<void> {
    try {
      if (this.closed) throw new StoreUnavailableError('the store is closed');
      if (this.unresolved) throw new StoreUnavailableError('an earlier write is not confirmed by the SPARQL engine yet: writes wait until it answers again');
      const mark = this.marks.next();
      const write = engineWrite(tx);
      write.insert.push(mark.quad);
      try {
        await this.write(write);
      } catch (err) {
        // Refused by the engine, or rolled back to end a deadlock: nothing of it was applied.
        if (!(err instanceof StoreUnavailableError) || err instanceof EngineDeadlockError) throw err;
        if (!(await this.settle(mark, tx.events))) throw err;
        return;
      }
      this.marks.settled(mark);
      this.committed.publish(tx.events);
    } finally {
      tx.release();
    }
    this.removeMarks();
  }

  /** Removes the marks of applied commits, a batch at a time, after the commit that completed one. */
  private removeMarks(): void {
    const marks = this.marks.removable();
    if (!marks) return;
    this.update(updateOperation(this.marks.quads(marks), [])).catch(() => this.marks.restore(marks));
  }

  /**
   * Finds out whether the commit of `mark`, whose answer was lost, was applied: true once it is
   * known to be (its events published), false once known not to be. Not known within
   * SETTLE_WAIT_MS: false, and writes are refused until a later answer of the engine tells (its
   * events are published then, if it was applied).
   */
  private async settle(mark: CommitMark, events: readonly DomainEvent[]): Promise<boolean> {
    const outcome = () => this.marks.applied(this.engine, mark).catch(() => undefined);
    const known = (applied: boolean) => {
      if (applied) {
        this.marks.settled(mark);
        this.committed.publish(events);
      }
      return applied;
    };
    for (const started = Date.now(); Date.now() - started < SETTLE_WAIT_MS; await pause(SETTLE_POLL_MS)) {
      const applied = await outcome();
      if (applied !== undefined) return known(applied);
    }
    this.unresolved = (async () => {
      while (!this.closed) {
        const applied = await outcome();
        if (applied !== undefined) return void known(applied);
        await pause(SETTLE_POLL_MS);
      }
    })().finally(() => (this.unresolved = undefined));
    return false;
  }

  /** One operation, or staged parts and one operation applying them (stagedWrite) when it is too large for one. */
  private async write(write: EngineWrite): Promise<void> {
    const quads = write.insert.length + write.remove.length;
    if (quads <= INLINE_QUADS) {
      const text = updateOperation(write.remove, write.insert, write.removedGraphs);
      if (text) await this.update(text);
      return;
    }
    const id = randomUUID();
    const { stage, apply } = stagedWrite(write, id);
    try {
      for (const part of stage) await this.update(part);
      await this.update(apply);
    } catch (err) {
      // Whether the applying operation was applied is not known when its answer was lost: the
      // staging graphs then go at the next start, not here.
      if (!(err instanceof StoreUnavailableError)) await this.removeGraphs([stagingGraph(id, 'insert'), stagingGraph(id, 'delete')]).catch(() => undefined);
      throw err;
    }
  }

  private removeGraphs(graphs: readonly string[]): Promise<void> {
    return this.update(updateOperation([], [], graphs));
  }

  /** Removes the staging graphs of writes that never applied them (a crash between their parts). */
  async removeLeftoverStaging(): Promise<number> {
    const rows = await this.engine.select(`SELECT DISTINCT ?g WHERE { GRAPH ?g { ?q ${iriToNt(STAGED_SUBJECT)} ?s } }`);
    const graphs = rows.results.bindings.map((b) => b.g.value);
    if (graphs.length > 0) await this.removeGraphs(graphs);
    return graphs.length;
  }

  private async update(text: string): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.engine.update(text);
        return;
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

  async graphTriples(graph: string): Promise<Quad[]> {
    // No graph can be named so (an id from a client, say): nothing to ask.
    if (!isValidIri(graph)) return [];
    const rows = await this.engine.select(`SELECT ?s ?p ?o WHERE { GRAPH ${iriToNt(graph)} { ?s ?p ?o } }`);
    return rows.results.bindings.map((b) => quad(termOf(b.s) as Quad['subject'], termOf(b.p) as Quad['predicate'], termOf(b.o) as Quad['object']));
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
    const asked = out.map((l, i) => [l, i] as const).filter(([l]) => l.datatype.value !== xsd.string || l.language !== '');
    if (asked.length === 0) return out;
    const rows = await this.engine.select(`SELECT ?i ?v WHERE { VALUES (?i ?v) { ${asked.map(([l, i]) => `(${i} ${termToNt(toEngine(l))})`).join(' ')} } }`);
    for (const b of rows.results.bindings) {
      const i = Number(b.i.value);
      out[i] = fromEngine(b.v.value, literals[i].datatype.value, literals[i].language || undefined);
    }
    return out;
  }

  /** Publishes the domain events that rebuild what consumers keep, from what the engine holds: once, at start. */
  async publishStored(): Promise<void> {
    await this.removeLeftoverStaging();
    this.committed.publish(await storedDomainEvents(this, await readCreatedAndLatestRevisions(this)));
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}
