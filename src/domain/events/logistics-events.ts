import type { Authorizer, Caller } from '../access/authorizer.js';
import { HttpError, badRequest, notFound } from '../../errors.js';
import type { CargoOntology } from '../../rdf/ontology.js';
import { namedNode, quad, type Quad } from '../../rdf/terms.js';
import { INTERNAL_SCHEME, cargo, rdf } from '../../rdf/vocab.js';
import { claimKey } from '../../store/claims.js';
import type { StoreReader, StoreWriter } from '../../store/graph-store.js';
import { eventQuads } from '../../store/schema/events.js';
import type { WriteTransaction } from '../../store/transaction.js';
import {
  eventsInBody,
  eventsPrefixOf,
  prepareEvent,
  type EventDraft,
  type PrepareContext,
  type PreparedEvent,
} from './event-body.js';
import type { EventIndex, EventPage, EventQuery, EventRecord } from './event-index.js';
import type { LogisticsObjects } from '../objects/logistics-objects.js';
import { shapeError } from '../../shapes/validator.js';
import type { LogisticsObjectEntry } from '../objects/revision-index.js';

/** Page size of event lists when the client gives no `limit`, and the largest it may ask for. */
export const EVENT_PAGE_SIZE = { default: 100, max: 1000 } as const;
/**
 * Events one bulk request may create. eventFor multiplies an event, so without a bound a body
 * within the size limits could still write hundreds of thousands of quads in one commit.
 */
export const MAX_BULK_EVENTS = 1000;

/** A stored event as a reader sees it. */
export interface EventView {
  record: EventRecord;
  triples: Quad[];
  /** Most specific type of the event: cargo:LogisticsEvent or a subclass such as cargo:StatusUpdateEvent. */
  type: string;
}

/** One (event, Logistics Object) pair of a bulk request: checked and claimed, or refused. */
interface BulkAttempt {
  object: string;
  prepared?: PreparedEvent;
  error?: HttpError;
}

/** What became of one (event, Logistics Object) pair of a bulk request. */
export type CreationOutcome =
  | { object: string; event: EventRecord; error?: undefined }
  | { object: string; error: HttpError; event?: undefined };

/**
 * Logistics Events: append-only, immutable status updates of Logistics Objects. Each event is
 * its own named graph (graph IRI = event IRI) plus metadata quads, written in one durable
 * commit; EventIndex (a cache over the store) answers filters and paging.
 */
export class LogisticsEvents {
  constructor(
    private readonly reads: StoreReader,
    private readonly writes: StoreWriter,
    readonly index: EventIndex,
    private readonly objects: LogisticsObjects,
    private readonly ontology: CargoOntology,
    private readonly access: Authorizer,
  ) {}

  /**
   * The object `caller` may post events to: 404 if unknown, 403 (or 404) if not allowed. Checked before a body is
   * parsed.
   */
  postTarget(objectIri: string, caller: Caller): Promise<LogisticsObjectEntry> {
    return this.permitted(objectIri, caller, 'post-event');
  }

  /** Stores the one event of `body` for `entry` (from `postTarget`). */
  async create(entry: LogisticsObjectEntry, body: Quad[], caller: Caller): Promise<EventRecord> {
    const drafts = eventsInBody(body, this.ontology);
    if (drafts.length !== 1) {
      throw badRequest(
        'one_event',
        `the body must hold exactly one Logistics Event, not ${drafts.length}; POST /logistics-events takes several`,
      );
    }
    const [draft] = drafts;
    const other = draft.targets.find((t) => t.value !== entry.iri);
    if (other)
      throw badRequest(
        'event_for_mismatch',
        `eventFor ${other.value} is not the Logistics Object posted to (${entry.iri})`,
        cargo.eventFor,
      );
    const tx = this.writes.begin();
    try {
      const prepared = this.prepareAndClaim(tx, draft, entry.iri, this.context());
      if ((await this.storedAmong([prepared])).size > 0) throw eventExists(prepared.iri);
      return (await this.commit(tx, [prepared], caller.agent))[0];
    } finally {
      tx.release();
    }
  }

  /**
   * Bulk intake: one event per (event node, eventFor object) pair of `body`, all stored in one
   * commit. A pair that fails (unknown object, no permission, invalid event) is reported in
   * its outcome and does not stop the others; only a body that cannot be read as events throws.
   */
  async createMany(body: Quad[], caller: Caller): Promise<CreationOutcome[]> {
    const drafts = eventsInBody(body, this.ontology);
    if (drafts.some((d) => d.targets.length === 0)) {
      throw badRequest(
        'missing_event_for',
        'every event posted to /logistics-events needs cargo:eventFor naming the Logistics Object(s) it is for',
        cargo.eventFor,
      );
    }
    const targets = drafts.flatMap((d) => d.targets);
    if (targets.some((t) => t.termType !== 'NamedNode' || t.value.startsWith(INTERNAL_SCHEME))) {
      throw badRequest('invalid_event_for', 'eventFor must link Logistics Objects by their @id', cargo.eventFor);
    }
    if (targets.length > MAX_BULK_EVENTS) {
      throw new HttpError(413, 'too_many_events', {
        message:
          `one request may create at most ${MAX_BULK_EVENTS} events (one per event and eventFor object), ` +
          `not ${targets.length}`,
      });
    }

    const existing = await this.objects.existingAmong(targets.map((t) => t.value));
    const tx = this.writes.begin();
    try {
      const attempts = this.claimAll(tx, drafts, caller, existing);
      await this.refuseStored(attempts);
      const ready = attempts.flatMap((a) => (a.prepared ? [a.prepared] : []));
      const committed = new Map((await this.commit(tx, ready, caller.agent)).map((r) => [r.iri, r]));
      return attempts.map((a) =>
        a.prepared
          ? { object: a.object, event: committed.get(a.prepared.iri)! }
          : { object: a.object, error: a.error! },
      );
    } finally {
      tx.release();
    }
  }

  /** Checks and claims each (event, object) pair of a bulk request; a pair that fails holds its error. */
  private claimAll(
    tx: WriteTransaction,
    drafts: readonly EventDraft[],
    caller: Caller,
    existing: (iri: string) => LogisticsObjectEntry,
  ): BulkAttempt[] {
    const context = this.context();
    const attempts: BulkAttempt[] = [];
    for (const draft of drafts) {
      for (const target of draft.targets) {
        try {
          const entry = this.allowed(existing(target.value), caller, 'post-event');
          attempts.push({ object: target.value, prepared: this.prepareAndClaim(tx, draft, entry.iri, context) });
        } catch (err) {
          if (!(err instanceof HttpError)) throw err;
          attempts.push({ object: target.value, error: err });
        }
      }
    }
    return attempts;
  }

  /** Turns the claimed pairs whose event is stored already into 409s (asked once they are claimed). */
  private async refuseStored(attempts: BulkAttempt[]): Promise<void> {
    const iris = await this.storedAmong(attempts.flatMap((a) => a.prepared ?? []));
    for (const a of attempts) {
      if (a.prepared && iris.has(a.prepared.iri)) [a.prepared, a.error] = [undefined, eventExists(a.prepared.iri)];
    }
  }

  /** The IRIs of `prepared` stored already: only an id the client chose can be (a generated one is a random UUID). */
  private async storedAmong(prepared: readonly PreparedEvent[]): Promise<Set<string>> {
    const chosen = prepared.flatMap((p) => (p.idChosenByClient ? [p.iri] : []));
    return new Set((await this.index.withIris(chosen)).map((r) => r.iri));
  }

  /**
   * One event: 404 if the object or the event is unknown. Readers need GET_LOGISTICS_EVENT on
   * the object, or to have posted the event themselves; anyone else gets the same refusal
   * whether or not the event exists.
   */
  async read(objectIri: string, eventId: string, caller: Caller): Promise<EventView> {
    const entry = await this.objects.existing(objectIri);
    const iri = eventsPrefixOf(objectIri) + eventId;
    const [record] = await this.index.withIris([iri]);
    // Denied the same way whether or not the event exists, so a denial reveals nothing.
    this.access.check(caller, { kind: 'read-event', object: entry, iri, event: record });
    if (!record) throw notFound(iri, 'Logistics Event not found');
    const triples = await this.triples(record);
    const types = triples
      .filter((t) => t.subject.value === record.iri && t.predicate.value === rdf.type)
      .map((t) => t.object.value);
    return { record, triples, type: this.ontology.mostSpecific(types)[0] ?? cargo.LogisticsEvent };
  }

  /**
   * The page of an object's events that `query` selects (read their graphs with `triples`), and how many match in all.
   */
  async list(objectIri: string, caller: Caller, query: EventQuery): Promise<EventPage> {
    const entry = await this.permitted(objectIri, caller, 'read-events');
    return this.index.select(entry.iri, query);
  }

  /** The stored graph of one event. */
  async triples(record: EventRecord): Promise<Quad[]> {
    const triples = await this.reads.graphTriples(record.iri);
    if (triples.length === 0)
      throw new HttpError(500, 'event_missing', { message: 'an event listed in the index has no data' });
    return triples;
  }

  private async permitted(
    objectIri: string,
    caller: Caller,
    kind: 'read-events' | 'post-event',
  ): Promise<LogisticsObjectEntry> {
    return this.allowed(await this.objects.existing(objectIri), caller, kind);
  }

  private allowed(entry: LogisticsObjectEntry, caller: Caller, kind: 'read-events' | 'post-event') {
    this.access.check(caller, { kind, object: entry });
    return entry;
  }

  private context(): PrepareContext {
    return { objectsPrefix: this.objects.objectsPrefix, now: new Date() };
  }

  /**
   * Checks the event and claims its id for `tx`: 409 if a write in flight creates it. Whether it is stored is asked
   * after the claim, so no write of it can come between that answer and this one's commit.
   */
  private prepareAndClaim(
    tx: WriteTransaction,
    draft: EventDraft,
    object: string,
    context: PrepareContext,
  ): PreparedEvent {
    const prepared = prepareEvent(draft, object, context);
    const violations = this.objects.shapeViolations(prepared.triples);
    if (violations.length > 0) throw shapeError(violations, 400);
    if (!tx.claim(claimKey.event(prepared.iri))) throw eventExists(prepared.iri);
    return prepared;
  }

  /**
   * Writes the events' graphs and metadata in one durable commit. Their arrival numbers are
   * taken in the tick that commits them, so arrival order is commit order.
   */
  private async commit(tx: WriteTransaction, prepared: PreparedEvent[], agent: string): Promise<EventRecord[]> {
    if (prepared.length === 0) return [];
    const recordedAt = new Date();
    const records: EventRecord[] = prepared.map((p) => ({
      iri: p.iri,
      object: p.object,
      sequence: this.index.claimSequence(),
      recordedAt,
      creationDate: p.creationDate,
      eventDate: p.eventDate,
      createdBy: agent,
      codes: p.codes,
    }));
    prepared.forEach((p, i) => {
      const g = namedNode(p.iri);
      for (const t of p.triples) tx.insert.push(quad(t.subject, t.predicate, t.object, g));
      tx.insert.push(...eventQuads(records[i]));
      tx.events.push({ kind: 'event-appended', event: records[i] });
    });
    await this.writes.commit(tx);
    return records;
  }
}

const eventExists = (iri: string) =>
  new HttpError(409, 'event_exists', { message: `a Logistics Event with @id ${iri} already exists`, resource: iri });
