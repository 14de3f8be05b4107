import { BoundedCache } from '../../bounded-cache.js';
import type { Authorizer, Caller } from '../access/authorizer.js';
import { HttpError, badQuery, notFound } from '../../errors.js';
import type { CargoOntology } from '../../rdf/ontology.js';
import { literal, namedNode, quad, type Quad } from '../../rdf/terms.js';
import type { NodeTriples } from '../../rdf/triples.js';
import { cargo, rdf } from '../../rdf/vocab.js';
import { changeFocus, shapeError, type ShapeValidator, type Violation } from '../../shapes/validator.js';
import { claimKey } from '../../store/claims.js';
import type { StoreReader, StoreWriter } from '../../store/graph-store.js';
import { revisionGraph } from '../../store/schema/revisions.js';
import type { DomainEvent, WriteTransaction } from '../../store/transaction.js';
import { splitIntoObjects, type NewObject } from './new-objects.js';
import type { LogisticsObjectEntry, RevisionIndex, RevisionInfo } from './revision-index.js';

/** Which revision a read asks for: the latest by default. */
export interface RevisionSelector {
  at?: Date;
  revision?: number;
}

/** A revision of a Logistics Object as a reader sees it. */
export interface ObjectView {
  entry: LogisticsObjectEntry;
  revision: RevisionInfo;
  latest: RevisionInfo;
}

export interface Created {
  iri: string;
  /** Most specific type of the object created first (the one the request names). */
  type: string;
}

/** How many parsed revisions `triples()` keeps (about 10 KB each for a 40-triple object). */
const PARSED_REVISIONS_KEPT = 2_000;

/** A revision made from `previous` by deleting `removed` and adding `added`. */
export interface RevisionChange {
  previous: readonly Quad[];
  added: readonly Quad[];
  removed: readonly Quad[];
  /** The new revision's triples by subject IRI, when the writer keeps them so (see ShapeValidator.validate). */
  byNode?: ReadonlyMap<string, NodeTriples>;
}

function found(iri: string, entry: LogisticsObjectEntry | undefined): LogisticsObjectEntry {
  if (!entry) throw notFound(iri, 'Logistics Object not found');
  return entry;
}

export class LogisticsObjects {
  readonly objectsPrefix: string;
  private readonly parsedRevisions = new BoundedCache<string, readonly Quad[]>(PARSED_REVISIONS_KEPT);
  /** Revisions (by their array of triples) checked against the shapes and found to conform. */
  private readonly conforming = new WeakSet<readonly Quad[]>();
  /** Told of each object whose latest revision a commit replaced (see `onSuperseded`). */
  private readonly supersededListeners: ((object: string) => void)[] = [];

  constructor(
    private readonly reads: StoreReader,
    private readonly writes: StoreWriter,
    readonly index: RevisionIndex,
    private readonly ontology: CargoOntology,
    private readonly access: Authorizer,
    baseUrl: string,
    /** Data-model validation of every revision written; none when switched off. */
    private readonly shapes?: ShapeValidator,
  ) {
    this.objectsPrefix = `${baseUrl}/logistics-objects/`;
  }

  mostSpecificType(types: string[]): string {
    return this.ontology.mostSpecific(types)[0] ?? cargo.LogisticsObject;
  }

  /**
   * Which of the objects of this server that `triples` name exist, as a check answered at once: those the index does
   * not hold are looked up first. Also true for an object created since (the index holds new objects).
   */
  async existenceIn(triples: readonly Quad[]): Promise<(iri: string) => boolean> {
    const held = (iri: string) => this.index.get(iri) !== undefined;
    if (this.index.holdsAll) return held;
    const named = new Set<string>();
    // Literals too: a Change names the objects it links as xsd:anyURI values.
    for (const t of triples)
      for (const term of [t.subject, t.object])
        if (term.termType !== 'BlankNode' && term.value.startsWith(this.objectsPrefix)) named.add(term.value);
    const found = await this.index.findAll(named);
    return (iri) => found.has(iri) || held(iri);
  }

  /** Creates the object(s) a body describes in one durable commit; a concurrent create of the same id gets 409. */
  async create(body: Quad[], caller: Caller): Promise<Created> {
    const exists = await this.existenceIn(body);
    const objects = splitIntoObjects(body, {
      ontology: this.ontology,
      objectsPrefix: this.objectsPrefix,
      exists: (iri) => exists(iri) || this.writes.claims.isHeld(claimKey.object(iri)),
    });
    const violations = objects.flatMap((o) => this.shapeViolations(o.triples));
    if (violations.length > 0) throw shapeError(violations, 400);
    return this.createObjects(objects, caller.agent);
  }

  /**
   * How `triples` (a revision, an event, a received API object) break the data model's shapes.
   * A revision made by `change` from one known to conform (checked whole once, in this process)
   * has only the nodes the change touched checked: the others, and the types of their values,
   * are as they were. Revisions that conform are remembered by array (the parsed-revision
   * cache hands the same array to the next change).
   */
  shapeViolations(triples: readonly Quad[], change?: RevisionChange): Violation[] {
    if (!this.shapes) return [];
    const focus =
      change && this.conforming.has(change.previous) ? changeFocus(triples, change.added, change.removed) : undefined;
    const violations = this.shapes.validate(triples, focus, focus && change?.byNode);
    if (violations.length === 0) this.conforming.add(triples);
    return violations;
  }

  private async createObjects(objects: NewObject[], agent: string): Promise<Created> {
    const tx = this.writes.begin();
    const createdAt = new Date();
    for (const o of objects) {
      tx.claim(claimKey.object(o.iri));
      const revision = {
        object: o.iri,
        number: 1,
        graph: revisionGraph(o.iri, 1),
        createdAt,
        createdBy: agent,
        mostSpecificType: this.mostSpecificType(o.types),
      };
      tx.revisions.push({ revision, triples: o.triples });
      // As written is as stored when every literal is one the store keeps so (the usual forms): then the
      // first change reads the triples checked here, not the store, and checks only what it touches.
      const kept = o.triples.every((t) => t.object.termType !== 'Literal' || this.reads.keepsAsWritten(t.object));
      tx.events.push({ kind: 'object-created', revision, ...(kept && { triples: o.triples }) });
    }
    await this.writes.commit(tx);
    return { iri: objects[0].iri, type: this.mostSpecificType(objects[0].types) };
  }

  /**
   * Claims the next revision number of `entry` for `tx`; undefined when another write already
   * claimed it (a concurrent change on the same revision). Pair with `addRevision`.
   */
  claimNextRevision(tx: WriteTransaction, entry: LogisticsObjectEntry): number | undefined {
    // An entry a bounded index let go may have missed a revision: as if another write had claimed it.
    if (!this.index.isCurrent(entry)) return undefined;
    const next = this.index.latest(entry).number + 1;
    return tx.claim(claimKey.revision(entry.iri, next)) ? next : undefined;
  }

  /** True while a write in flight creates the revision after the latest one of `entry`. */
  isNextRevisionClaimed(entry: LogisticsObjectEntry): boolean {
    return this.writes.claims.isHeld(claimKey.revision(entry.iri, this.index.latest(entry).number + 1));
  }

  /**
   * Adds revision `number` (claimed with `claimNextRevision`) holding `triples` to `tx`.
   * `triples` must be in the store's canonical form (read from it, or canonicalised): the
   * after-commit stream hands them to the parsed-revision cache, which the next change reads.
   */
  addRevision(
    tx: WriteTransaction,
    entry: LogisticsObjectEntry,
    number: number,
    triples: Quad[],
    agent: string,
    change: RevisionChange,
  ): RevisionInfo {
    const latest = this.index.latest(entry);
    const revision: RevisionInfo = {
      object: entry.iri,
      number,
      graph: revisionGraph(entry.iri, number),
      createdAt: new Date(Math.max(Date.now(), latest.createdAt.getTime() + 1)),
      createdBy: agent,
      // A change that leaves the object's types alone leaves its most specific type too.
      mostSpecificType: ![...change.added, ...change.removed].some(
        (t) => t.subject.value === entry.iri && t.predicate.value === rdf.type,
      )
        ? latest.mostSpecificType
        : this.mostSpecificType(
            triples
              .filter((t) => t.subject.value === entry.iri && t.predicate.value === rdf.type)
              .map((t) => t.object.value),
          ),
    };
    const replaces = { revision: latest, triples: change.previous, added: change.added, removed: change.removed };
    tx.revisions.push({ revision, triples, replaces });
    tx.events.push({ kind: 'revision-written', revision, triples });
    return revision;
  }

  /** Consumer of the after-commit stream: the revision just written is what the next change reads. */
  onCommitted(events: readonly DomainEvent[]): void {
    for (const e of events) {
      if (e.kind !== 'revision-written' && e.kind !== 'object-created') continue;
      // The revision it replaces is rarely read again.
      if (e.kind === 'revision-written') {
        this.parsedRevisions.delete(revisionGraph(e.revision.object, e.revision.number - 1));
        for (const listener of this.supersededListeners) listener(e.revision.object);
      }
      // Without its triples (another process's commit), whatever is kept under its graph is not it.
      if (e.triples) this.parsedRevisions.set(e.revision.graph, e.triples);
      else this.parsedRevisions.delete(e.revision.graph);
    }
  }

  /**
   * Calls `listener` with each object that gets a new latest revision, once it is committed (by any
   * process): what a cache made while the previous one was the latest can never be asked for again.
   */
  onSuperseded(listener: (object: string) => void): void {
    this.supersededListeners.push(listener);
  }

  /** Creates the data holder's Organization at first start. */
  async ensureDataHolder(iri: string, name: string): Promise<void> {
    if ((await this.index.find(iri)) || this.writes.claims.isHeld(claimKey.object(iri))) return;
    const subject = namedNode(iri);
    await this.createObjects(
      [
        {
          iri,
          types: [cargo.Organization],
          triples: [
            quad(subject, namedNode(rdf.type), namedNode(cargo.Organization)),
            quad(subject, namedNode(cargo.name), literal(name)),
          ],
        },
      ],
      iri,
    );
  }

  /** The entry of an object of this server: 404 if unknown. */
  async existing(iri: string): Promise<LogisticsObjectEntry> {
    return found(iri, await this.index.find(iri));
  }

  /** The objects of `iris` that exist, looked up at once: a lookup of one that does not answers 404. */
  async existingAmong(iris: readonly string[]): Promise<(iri: string) => LogisticsObjectEntry> {
    const entries = await this.index.findAll(iris);
    return (iri) => found(iri, entries.get(iri));
  }

  /** The entry of an object the caller may read: 404 if unknown, 403 (or 404) if not allowed. */
  async readableEntry(iri: string, caller: Caller): Promise<LogisticsObjectEntry> {
    return this.readable(await this.existing(iri), caller);
  }

  private readable(entry: LogisticsObjectEntry, caller: Caller): LogisticsObjectEntry {
    this.access.check(caller, { kind: 'read-object', object: entry });
    return entry;
  }

  /** The latest revision: from the index alone, at once when it holds the object. */
  readLatest(iri: string, caller: Caller): ObjectView | Promise<ObjectView> {
    const held = this.index.get(iri);
    if (held) return this.latestView(this.readable(held, caller));
    return this.index.findWithLatest(iri).then(({ entry, latest }) => {
      if (latest) this.parsedRevisions.set(latest.graph, latest.triples);
      return this.latestView(this.readable(found(iri, entry), caller));
    });
  }

  private latestView(entry: LogisticsObjectEntry): ObjectView {
    const latest = this.index.latest(entry);
    return { entry, revision: latest, latest };
  }

  async read(iri: string, caller: Caller, selector: RevisionSelector): Promise<ObjectView> {
    const entry = await this.readableEntry(iri, caller);
    return { entry, revision: await this.selectRevision(entry, selector), latest: this.index.latest(entry) };
  }

  async selectRevision(entry: LogisticsObjectEntry, selector: RevisionSelector): Promise<RevisionInfo> {
    if (selector.revision !== undefined) {
      const found = await this.index.revision(entry, selector.revision);
      if (!found) throw notFound(entry.iri, `revision ${selector.revision} of this Logistics Object does not exist`);
      return found;
    }
    if (selector.at !== undefined) {
      if (selector.at.getTime() > Date.now()) throw badQuery('at', 'at must not be in the future');
      const found = await this.index.revisionAt(entry, selector.at);
      if (!found) throw notFound(entry.iri, 'the Logistics Object did not exist at that time');
      return found;
    }
    return this.index.latest(entry);
  }

  /**
   * The triples of one revision (default graph), as the store keeps them. Revision graphs never
   * change, so recently read ones are kept parsed: a change reads the latest revision each time.
   * Callers must not modify the returned array.
   */
  async triples(revision: RevisionInfo): Promise<readonly Quad[]> {
    const cached = this.parsedRevisions.get(revision.graph);
    if (cached) return cached;
    let triples = await this.reads.graphTriples(revision.graph);
    if (triples.length === 0 && this.reads.completeWriteOf) {
      await this.reads.completeWriteOf(revision.graph);
      triples = await this.reads.graphTriples(revision.graph);
    }
    if (triples.length === 0)
      throw new HttpError(500, 'revision_missing', {
        message: `revision ${revision.number} of ${revision.object} is listed in the index but has no data`,
      });
    this.parsedRevisions.set(revision.graph, triples);
    return triples;
  }

  /** Linked Logistics Objects of this server that the caller may read, for `embedded=true`. */
  async linkedViews(
    triples: readonly Quad[],
    caller: Caller,
    selector: RevisionSelector,
    skip: ReadonlySet<string>,
  ): Promise<ObjectView[]> {
    const views: ObjectView[] = [];
    const seen = new Set(skip);
    for (const t of triples) {
      if (t.object.termType !== 'NamedNode' || t.predicate.value === rdf.type || seen.has(t.object.value)) continue;
      seen.add(t.object.value);
      const entry = await this.index.find(t.object.value);
      if (!entry || !this.access.allows(caller, { kind: 'read-object', object: entry })) continue;
      const revision = selector.at ? await this.index.revisionAt(entry, selector.at) : this.index.latest(entry);
      if (revision) views.push({ entry, revision, latest: this.index.latest(entry) });
    }
    return views;
  }
}
