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

/**
 * Arrival order. Two processes on one engine may give events written at the same moment the same
 * number: those are ordered by IRI, so every process lists them alike.
 */
const arrival = (a: EventRecord, b: EventRecord) =>
  a.sequence - b.sequence || (a.iri < b.iri ? -1 : a.iri > b.iri ? 1 : 0);

/** Inserts in arrival order; commits are applied in claim order, so this is nearly always a push. */
function insertInOrder(list: EventRecord[], record: EventRecord): void {
  let at = list.length;
  while (at > 0 && arrival(list[at - 1], record) > 0) at -= 1;
  list.splice(at, 0, record);
}

/**
 * In-memory index of all Logistics Events, per object in arrival order and per event code,
 * kept by the after-commit stream (and so rebuilt at start from the events metadata graph).
 * Filters and paging run on it, so a list request touches only the events of its codes and
 * reads from the store only the graphs of its page.
 */
export class EventIndex {
  private readonly byObject = new Map<string, ObjectEvents>();
  private readonly byIri = new Map<string, EventRecord>();
  /** Filter names per distinct code; codes repeat across events, so this stays small. */
  private readonly keysByCode = new Map<string, Set<string>>();
  private nextSequence = 1;

  get size(): number {
    return this.byIri.size;
  }

  /** The next arrival number; claim it in the same tick as the commit that uses it. */
  claimSequence(): number {
    return this.nextSequence++;
  }

  get(iri: string): EventRecord | undefined {
    return this.byIri.get(iri);
  }

  all(): IterableIterator<EventRecord> {
    return this.byIri.values();
  }

  /** Consumer of the after-commit stream. */
  onCommitted(events: readonly DomainEvent[]): void {
    for (const e of events) if (e.kind === 'event-appended') this.add(e.event);
  }

  /** Once per event: a commit's events may come twice (a process starting while others write on the same engine). */
  add(record: EventRecord): void {
    if (this.byIri.has(record.iri)) return;
    let events = this.byObject.get(record.object);
    if (!events) {
      events = { all: [], byCode: new Map() };
      this.byObject.set(record.object, events);
    }
    insertInOrder(events.all, record);
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
    this.byIri.set(record.iri, record);
    if (record.sequence >= this.nextSequence) this.nextSequence = record.sequence + 1;
  }

  /** The page of `object`'s events that `query` asks for, and how many match in all. */
  select(object: string, query: EventQuery): EventPage {
    const events = this.byObject.get(object);
    if (!events) return { total: 0, events: [] };
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
