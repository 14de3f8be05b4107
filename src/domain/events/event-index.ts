import { BoundedCache } from '../../bounded-cache.js';
import type { StoredEvents } from '../../store/graph-store.js';
import type { EventRecord } from '../../store/schema/events.js';
import type { DomainEvent } from '../../store/transaction.js';

export type { EventRecord };

export type EventSort = 'ASC-creationDate' | 'DESC-creationDate' | 'ASC-eventDate' | 'DESC-eventDate';

const SORTS: Record<EventSort, { field: 'creationDate' | 'eventDate'; sign: 1 | -1 }> = {
  'ASC-creationDate': { field: 'creationDate', sign: 1 },
  'DESC-creationDate': { field: 'creationDate', sign: -1 },
  'ASC-eventDate': { field: 'eventDate', sign: 1 },
  'DESC-eventDate': { field: 'eventDate', sign: -1 },
};
export const EVENT_SORTS = Object.keys(SORTS) as EventSort[];

/** A list request: filters (all optional, bounds exclusive), order and page. */
export interface EventQuery {
  /** Short codes (`DEP`) or code-list IRIs; an event matches if its code is any of them. */
  codes?: readonly string[];
  createdAfter?: Date;
  createdBefore?: Date;
  occurredAfter?: Date;
  occurredBefore?: Date;
  /** Default: arrival order. */
  sort?: EventSort;
  skip: number;
  limit: number;
}

export interface EventPage {
  /** All events that match, before paging. */
  total: number;
  events: EventRecord[];
}

/**
 * The names an event code answers to in filters: itself and, for a code-list IRI such as
 * `…/StatusCode#DEP`, the short code `DEP` and the `…/StatusCode/DEP` spelling (query
 * strings often carry `/` for `#`, as for `topicType`).
 */
export function codeKeys(code: string): Set<string> {
  const keys = new Set([code]);
  const hash = code.lastIndexOf('#');
  if (hash > 0 && hash < code.length - 1) {
    keys.add(code.slice(hash + 1));
    keys.add(`${code.slice(0, hash)}/${code.slice(hash + 1)}`);
  }
  return keys;
}

/** One object's events in arrival order, and the same per filter name of their codes. */
interface ObjectEvents {
  all: EventRecord[];
  byCode: Map<string, EventRecord[]>;
}

/** A read of an object's events from the store under way, with the events committed for it meanwhile. */
interface Fill {
  arrived: EventRecord[];
  done: Promise<ObjectEvents>;
}

/** Distinct event codes whose filter names are kept (codes repeat across events: a few suffice). */
const CODES_KEPT = 1000;

/**
 * Arrival order. Two processes on one engine may give events written at the same moment the same
 * number: those are ordered by IRI, so every process lists them alike.
 */
const arrival = (a: EventRecord, b: EventRecord) =>
  a.sequence - b.sequence || (a.iri < b.iri ? -1 : a.iri > b.iri ? 1 : 0);

/**
 * Inserts in arrival order (commits are applied in claim order, so this is nearly always a push); false if the list
 * holds it already (a commit's events may come twice: a process starting while others write on the same engine).
 */
function insertInOrder(list: EventRecord[], record: EventRecord): boolean {
  let at = list.length;
  while (at > 0 && arrival(list[at - 1], record) > 0) at -= 1;
  if (at > 0 && arrival(list[at - 1], record) === 0) return false;
  list.splice(at, 0, record);
  return true;
}

/**
 * Logistics Events' metadata per object, for filters and paging: a bounded cache of the objects read lately (their
 * events weighed by count), filled from the store (StoredEvents) on a miss and kept right by the after-commit
 * stream, which publishes every process's events; the rest stays in the store, so memory does not grow with history.
 */
export class EventIndex {
  private readonly cache: BoundedCache<string, ObjectEvents>;
  private readonly filling = new Map<string, Fill>();
  private readonly keysByCode = new BoundedCache<string, Set<string>>(CODES_KEPT);

  private constructor(
    private readonly stored: StoredEvents,
    maxCachedEvents: number,
    private nextSequence: number,
  ) {
    this.cache = new BoundedCache(maxCachedEvents, (events) => events.all.length);
  }

  /** Opens the index over `stored`, keeping at most `maxCachedEvents` events' metadata: one read, the last number. */
  static async open(stored: StoredEvents, maxCachedEvents: number): Promise<EventIndex> {
    return new EventIndex(stored, maxCachedEvents, (await stored.lastSequence()) + 1);
  }

  /** Events whose metadata is in memory. */
  get cachedEvents(): number {
    return this.cache.weight;
  }

  /** The next arrival number; claim it in the same tick as the commit that uses it. */
  claimSequence(): number {
    return this.nextSequence++;
  }

  /** Those of `iris` that are stored. */
  withIris(iris: readonly string[]): Promise<EventRecord[]> {
    return iris.length === 0 ? Promise.resolve([]) : this.stored.withIris(iris);
  }

  /** The events `agent` posted. */
  postedBy(agent: string): Promise<EventRecord[]> {
    return this.stored.postedBy(agent);
  }

  /** Consumer of the after-commit stream. */
  onCommitted(events: readonly DomainEvent[]): void {
    for (const e of events) if (e.kind === 'event-appended') this.appended(e.event);
  }

  private appended(record: EventRecord): void {
    if (record.sequence >= this.nextSequence) this.nextSequence = record.sequence + 1;
    const cached = this.cache.get(record.object);
    // Set again to be weighed again.
    if (cached && this.add(cached, record)) this.cache.set(record.object, cached);
    // Read before or after its commit, it is added once (add).
    this.filling.get(record.object)?.arrived.push(record);
  }

  /** `object`'s events in arrival order. */
  async ofObject(object: string): Promise<readonly EventRecord[]> {
    return (await this.objectEvents(object)).all;
  }

  /** The page of `object`'s events that `query` asks for, and how many match in all. */
  async select(object: string, query: EventQuery): Promise<EventPage> {
    const events = await this.objectEvents(object);
    const candidates = query.codes ? withCodes(events, query.codes) : events.all;
    const test = datePredicate(query);
    const matches = test ? candidates.filter(test) : candidates;
    let ordered = matches;
    if (query.sort) {
      const { field, sign } = SORTS[query.sort];
      ordered = [...matches].sort((a, b) => sign * (a[field] - b[field] || arrival(a, b)));
    }
    return { total: matches.length, events: ordered.slice(query.skip, query.skip + query.limit) };
  }

  /** From the cache, else read from the store once however many ask meanwhile. */
  private objectEvents(object: string): Promise<ObjectEvents> {
    const cached = this.cache.get(object);
    if (cached) return Promise.resolve(cached);
    const under = this.filling.get(object);
    if (under) return under.done;
    const arrived: EventRecord[] = [];
    const done = this.stored.ofObject(object).then(
      (records) => {
        this.filling.delete(object);
        const events: ObjectEvents = { all: [], byCode: new Map() };
        for (const record of [...records, ...arrived]) this.add(events, record);
        this.cache.set(object, events);
        return events;
      },
      (err: unknown) => {
        this.filling.delete(object);
        throw err;
      },
    );
    this.filling.set(object, { arrived, done });
    return done;
  }

  /** Adds `record` to an object's events; false if they hold it already. */
  private add(events: ObjectEvents, record: EventRecord): boolean {
    if (!insertInOrder(events.all, record)) return false;
    const names = new Set<string>();
    for (const code of record.codes) {
      let keys = this.keysByCode.get(code);
      if (!keys) {
        keys = codeKeys(code);
        this.keysByCode.set(code, keys);
      }
      for (const k of keys) names.add(k);
    }
    for (const name of names) {
      const list = events.byCode.get(name);
      if (list) insertInOrder(list, record);
      else events.byCode.set(name, [record]);
    }
    return true;
  }
}

/** The events whose code answers to any of `codes`, in arrival order. */
function withCodes(events: ObjectEvents, codes: readonly string[]): EventRecord[] {
  const lists = [...new Set(codes)].map((c) => events.byCode.get(c)).filter((l): l is EventRecord[] => l !== undefined);
  if (lists.length <= 1) return lists[0] ?? [];
  return [...new Set(lists.flat())].sort(arrival);
}

function datePredicate(query: EventQuery): ((record: EventRecord) => boolean) | undefined {
  const bounds: [field: 'creationDate' | 'eventDate', after: Date | undefined, before: Date | undefined][] = [
    ['creationDate', query.createdAfter, query.createdBefore],
    ['eventDate', query.occurredAfter, query.occurredBefore],
  ];
  const tests = bounds.flatMap(([field, after, before]) => [
    ...(after ? [(r: EventRecord) => r[field] > after.getTime()] : []),
    ...(before ? [(r: EventRecord) => r[field] < before.getTime()] : []),
  ]);
  if (tests.length === 0) return undefined;
  return (record) => tests.every((t) => t(record));
}
