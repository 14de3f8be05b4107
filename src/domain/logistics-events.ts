import { Parser } from 'n3';
import type { AccessControl, Caller } from '../auth/access-control.js';
import type { EventPermission, EventPermissionCheck } from '../auth/event-permissions.js';
import { HttpError, badRequest, notFound } from '../errors.js';
import type { CargoOntology } from '../rdf/ontology.js';
import { namedNode, quad, type Quad } from '../rdf/terms.js';
import { INTERNAL_SCHEME, api, cargo, rdf } from '../rdf/vocab.js';
import type { GraphStore } from '../store/graph-store.js';
import { eventsInBody, eventsPrefixOf, prepareEvent, type EventDraft, type PrepareContext, type PreparedEvent } from './event-body.js';
import { eventMetadataQuads, type EventIndex, type EventPage, type EventQuery, type EventRecord } from './event-index.js';
import type { LogisticsObjects } from './logistics-objects.js';
import { shapeError } from '../shapes/validator.js';
import type { LogisticsObjectEntry } from './revision-index.js';

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
  typeHeader: string;
}

/** What became of one (event, Logistics Object) pair of a bulk request. */
export type CreationOutcome = { object: string; event: EventRecord; error?: undefined } | { object: string; error: HttpError; event?: undefined };

/**
 * Logistics Events: append-only, immutable status updates of Logistics Objects. Each event is
 * its own named graph (graph IRI = event IRI) plus metadata quads, written in one durable
 * commit; the in-memory EventIndex answers filters and paging.
 */
export class LogisticsEvents {
  constructor(
    private readonly store: GraphStore,
    readonly index: EventIndex,
    private readonly objects: LogisticsObjects,
    private readonly ontology: CargoOntology,
    private readonly access: AccessControl,
    private readonly permits: EventPermissionCheck,
  ) {}

  /** The object `caller` may post events to: 404 if unknown, 403 (or 404) if not allowed. Checked before a body is parsed. */
  postTarget(objectIri: string, caller: Caller): LogisticsObjectEntry {
    return this.permitted(objectIri, caller, api.POST_LOGISTICS_EVENT);
  }

  /** Stores the one event of `body` for `entry` (from `postTarget`). */
  async create(entry: LogisticsObjectEntry, body: Quad[], caller: Caller): Promise<EventRecord> {
    const drafts = eventsInBody(body, this.ontology);
    if (drafts.length !== 1) {
      throw badRequest('one_event', `the body must hold exactly one Logistics Event, not ${drafts.length}; POST /logistics-events takes several`);
    }
    const [draft] = drafts;
    const other = draft.targets.find((t) => t.value !== entry.iri);
    if (other) throw badRequest('event_for_mismatch', `eventFor ${other.value} is not the Logistics Object posted to (${entry.iri})`, cargo.eventFor);
    const prepared = this.prepareAndReserve(draft, entry.iri, this.context());
    try {
      return (await this.commit([prepared], caller.agent))[0];
    } finally {
      this.index.release(prepared.iri);
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
      throw badRequest('missing_event_for', 'every event posted to /logistics-events needs cargo:eventFor naming the Logistics Object(s) it is for', cargo.eventFor);
    }
    const targets = drafts.flatMap((d) => d.targets);
    if (targets.some((t) => t.termType !== 'NamedNode' || t.value.startsWith(INTERNAL_SCHEME))) {
      throw badRequest('invalid_event_for', 'eventFor must link Logistics Objects by their @id', cargo.eventFor);
    }
    if (targets.length > MAX_BULK_EVENTS) {
      throw new HttpError(413, 'too_many_events', { message: `one request may create at most ${MAX_BULK_EVENTS} events (one per event and eventFor object), not ${targets.length}` });
    }

    const context = this.context();
    const attempts: { object: string; prepared?: PreparedEvent; error?: HttpError }[] = [];
    try {
      for (const draft of drafts) {
        for (const target of draft.targets) {
          try {
            const entry = this.permitted(target.value, caller, api.POST_LOGISTICS_EVENT);
            attempts.push({ object: target.value, prepared: this.prepareAndReserve(draft, entry.iri, context) });
          } catch (err) {
            if (!(err instanceof HttpError)) throw err;
            attempts.push({ object: target.value, error: err });
          }
        }
      }
      const ready = attempts.flatMap((a) => (a.prepared ? [a.prepared] : []));
      const stored = new Map((await this.commit(ready, caller.agent)).map((r) => [r.iri, r]));
      return attempts.map((a) => (a.prepared ? { object: a.object, event: stored.get(a.prepared.iri)! } : { object: a.object, error: a.error! }));
    } finally {
      for (const a of attempts) if (a.prepared) this.index.release(a.prepared.iri);
    }
  }

  /**
   * One event: 404 if the object or the event is unknown. Readers need GET_LOGISTICS_EVENT on
   * the object, or to have posted the event themselves; anyone else gets the same refusal
   * whether or not the event exists.
   */
  read(objectIri: string, eventId: string, caller: Caller): EventView {
    const entry = this.objects.index.get(objectIri);
    if (!entry) throw notFound(objectIri, 'Logistics Object not found');
    const iri = eventsPrefixOf(objectIri) + eventId;
    const record = this.index.get(iri);
    if (!this.permits(caller, api.GET_LOGISTICS_EVENT, entry) && (!record || record.createdBy !== caller.agent)) throw this.access.denied(iri);
    if (!record) throw notFound(iri, 'Logistics Event not found');
    const triples = this.triples(record);
    const types = triples.filter((t) => t.subject.value === record.iri && t.predicate.value === rdf.type).map((t) => t.object.value);
    return { record, triples, typeHeader: this.ontology.mostSpecific(types)[0] ?? cargo.LogisticsEvent };
  }

  /** The page of an object's events that `query` selects (read their graphs with `triples`), and how many match in all. */
  list(objectIri: string, caller: Caller, query: EventQuery): EventPage {
    const entry = this.permitted(objectIri, caller, api.GET_LOGISTICS_EVENT);
    return this.index.select(entry.iri, query);
  }

  /** The stored graph of one event. */
  triples(record: EventRecord): Quad[] {
    const text = this.store.graphNTriples(record.iri);
    if (!text) throw new HttpError(500, 'event_missing', { message: 'an event listed in the index has no data' });
    return new Parser({ format: 'application/n-triples' }).parse(text);
  }

  private permitted(objectIri: string, caller: Caller, permission: EventPermission): LogisticsObjectEntry {
    const entry = this.objects.index.get(objectIri);
    if (!entry) throw notFound(objectIri, 'Logistics Object not found');
    if (!this.permits(caller, permission, entry)) throw this.access.denied(objectIri);
    return entry;
  }

  private context(): PrepareContext {
    return { objectsPrefix: this.objects.objectsPrefix, now: new Date() };
  }

  /** Checks the event and claims its id; the caller releases the claim once the commit is done. */
  private prepareAndReserve(draft: EventDraft, object: string, context: PrepareContext): PreparedEvent {
    const prepared = prepareEvent(draft, object, context);
    const violations = this.objects.shapeViolations(prepared.triples);
    if (violations.length > 0) throw shapeError(violations, 400);
    if (!this.index.reserve(prepared.iri)) {
      throw new HttpError(409, 'event_exists', { message: `a Logistics Event with @id ${prepared.iri} already exists`, resource: prepared.iri });
    }
    return prepared;
  }

  /** Writes the events' graphs and metadata in one durable commit; the index learns them in the same tick. */
  private async commit(prepared: PreparedEvent[], agent: string): Promise<EventRecord[]> {
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
    const insert: Quad[] = [];
    prepared.forEach((p, i) => {
      const g = namedNode(p.iri);
      for (const t of p.triples) insert.push(quad(t.subject, t.predicate, t.object, g));
      insert.push(...eventMetadataQuads(records[i]));
    });
    await this.store.commit({ insert }, () => {
      for (const r of records) this.index.add(r);
    });
    return records;
  }
}
