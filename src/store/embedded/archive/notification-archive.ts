import { createHash } from 'node:crypto';
import type { Quad } from '../../../rdf/terms.js';
import { readStoreNTriples, ntriplesInGraph } from '../../../rdf/ntriples.js';
import type { ArchiveDb } from './archive-db.js';
import type { NotificationFilter, ReceivedNotificationStore } from '../../graph-store.js';
import { payloadTriples } from '../../schema/annotated-graph.js';
import {
  receivedNotificationFromNTriples,
  type ReceivedNotificationRecord,
} from '../../schema/received-notifications.js';

/** A received notification in the archive: its graph as N-Triples and its record, the time as epoch ms. */
export interface ArchivedNotification {
  ntriples: string;
  record: Omit<ReceivedNotificationRecord, 'receivedAt'> & { receivedAt: number };
}

/** Arrival number. */
export type NotificationKey = number;
/**
 * `id {iri}` or `key {sender} {Idempotency-Key}`: what makes a notification a duplicate; `last`: the highest arrival
 * number when retention last removed some.
 */
export type NotificationIdKey = string;
/**
 * [what, value, arrival number]: `sender`, `type` (event type), `object` with their IRI, `time` with the arrival time
 * (ms).
 */
export type NotificationByKey = [string, string | number, number];

/** LMDB keys stay well below its limit (1978 bytes) whatever the IRIs: long values are keyed by their hash. */
const KEY_PART_BYTES = 400;
const keyPart = (value: string) =>
  Buffer.byteLength(value) <= KEY_PART_BYTES ? value : `sha256:${createHash('sha256').update(value).digest('hex')}`;
const idKey = (iri: string): NotificationIdKey => `id ${keyPart(iri)}`;
const senderKey = (sender: string, key: string): NotificationIdKey => `key ${keyPart(sender)} ${keyPart(key)}`;
const LAST = Number.MAX_SAFE_INTEGER;
/** The `notification-ids` entry holding the highest arrival number archived before retention removed some. */
const LAST_NUMBER = 'last';

const toRecord = ({ record }: ArchivedNotification): ReceivedNotificationRecord => ({
  ...record,
  receivedAt: new Date(record.receivedAt),
});

/**
 * Received notifications on disk, never in the hot store: by arrival number, by what makes one a duplicate (@id,
 * Idempotency-Key) and one index per list filter, so memory holds none however many there are. Derived from
 * journal records like the rest of the archive (docs/received-notifications.md, "Where they are kept").
 */
export class NotificationArchive implements ReceivedNotificationStore {
  constructor(
    private readonly notifications: ArchiveDb<NotificationKey, ArchivedNotification>,
    private readonly ids: ArchiveDb<NotificationIdKey, NotificationKey>,
    private readonly by: ArchiveDb<NotificationByKey, 1>,
  ) {}

  /** Archives a received notification's graph; false if it was there already (a replayed record) or is not one. */
  archive(graph: string, ntriples: string): boolean {
    const record = receivedNotificationFromNTriples(graph, ntriples);
    if (!record || this.notifications.has(record.sequence)) return false;
    const n = record.sequence;
    const receivedAt = record.receivedAt.getTime();
    this.notifications.put(n, { ntriples, record: { ...record, receivedAt } });
    this.ids.put(idKey(record.iri), n);
    if (record.idempotencyKey !== undefined) this.ids.put(senderKey(record.sender, record.idempotencyKey), n);
    this.by.put(['sender', keyPart(record.sender), n], 1);
    this.by.put(['type', keyPart(record.eventType), n], 1);
    if (record.object !== undefined) this.by.put(['object', keyPart(record.object), n], 1);
    this.by.put(['time', receivedAt, n], 1);
    return true;
  }

  /**
   * Removes up to `max` of the notifications received before `cutoff`, with their index entries;
   * returns how many. The journal may still hold some of them (those written since the last
   * snapshot): a start puts those back in the archive, and the next removal takes them again.
   */
  async removeReceivedBefore(cutoff: Date, max: number): Promise<number> {
    const before = cutoff.getTime();
    const old = this.by
      .keysIn(['time', 0, 0], ['time', before, 0], (key) => key[0] === 'time' && (key[1] as number) < before)
      .slice(0, max);
    // Kept apart from the entries before any is removed, so that arrival numbers are never given
    // twice: written here rather than with each notification (one LMDB write fewer per notification).
    if (old.length > 0) this.ids.put(LAST_NUMBER, this.highestNumber());
    for (const key of old) {
      this.by.remove(key);
      const n = key[2];
      const entry = this.notifications.get(n);
      if (!entry) continue;
      const { record } = entry;
      this.notifications.remove(n);
      const ids = [
        idKey(record.iri),
        ...(record.idempotencyKey === undefined ? [] : [senderKey(record.sender, record.idempotencyKey)]),
      ];
      for (const id of ids) if (this.ids.get(id) === n) this.ids.remove(id);
      this.by.remove(['sender', keyPart(record.sender), n]);
      this.by.remove(['type', keyPart(record.eventType), n]);
      if (record.object !== undefined) this.by.remove(['object', keyPart(record.object), n]);
    }
    return old.length;
  }

  async withId(iri: string): Promise<ReceivedNotificationRecord | undefined> {
    return this.found(this.ids.get(idKey(iri)), (r) => r.iri === iri);
  }

  async withKey(sender: string, key: string): Promise<ReceivedNotificationRecord | undefined> {
    return this.found(this.ids.get(senderKey(sender, key)), (r) => r.sender === sender && r.idempotencyKey === key);
  }

  private found(
    n: NotificationKey | undefined,
    same: (record: ReceivedNotificationRecord) => boolean,
  ): ReceivedNotificationRecord | undefined {
    const entry = n === undefined ? undefined : this.notifications.get(n);
    const record = entry && toRecord(entry);
    return record && same(record) ? record : undefined;
  }

  async lastSequence(): Promise<number> {
    return this.highestNumber();
  }

  private highestNumber(): number {
    return Math.max(this.ids.get(LAST_NUMBER) ?? 0, this.notifications.lastKey() ?? 0);
  }

  async list(
    filter: NotificationFilter,
    skip: number,
    limit: number,
  ): Promise<{ total: number; page: ReceivedNotificationRecord[] }> {
    const after = filter.receivedAfter?.getTime();
    const before = filter.receivedBefore?.getTime();
    const timed = after !== undefined || before !== undefined;
    // One index gives the candidates (the likely narrowest: an object, a sender, an event type, a time window).
    const indexes: [string, string | number, string | number][] = [];
    if (filter.object !== undefined) indexes.push(['object', keyPart(filter.object), keyPart(filter.object)]);
    if (filter.sender !== undefined) indexes.push(['sender', keyPart(filter.sender), keyPart(filter.sender)]);
    if (filter.eventType !== undefined) indexes.push(['type', keyPart(filter.eventType), keyPart(filter.eventType)]);
    if (timed) indexes.push(['time', after ?? 0, before ?? LAST]);
    let numbers: number[];
    if (indexes.length > 0) {
      const [what, from, to] = indexes[0];
      const inRange = (key: NotificationByKey) =>
        key[0] === what && (what === 'time' ? key[1] >= from && key[1] <= to : key[1] === from);
      numbers = this.by.keysIn([what, from, 0], [what, to, LAST], inRange).map((key) => key[2]);
    } else {
      numbers = this.notifications.keysIn(undefined, undefined, () => true);
    }
    // In arrival order (the time index is in time order, entries not yet in LMDB come last).
    numbers.sort((a, b) => a - b);
    const record = (n: number) => {
      const entry = this.notifications.get(n);
      return entry ? [toRecord(entry)] : [];
    };
    // One filter: its index answers alone, so the count is its keys' and only the page's notifications are read.
    if (indexes.length <= 1) return { total: numbers.length, page: numbers.slice(skip, skip + limit).flatMap(record) };
    const matching = numbers
      .flatMap(record)
      .filter(
        (r) =>
          (filter.sender === undefined || r.sender === filter.sender) &&
          (filter.eventType === undefined || r.eventType === filter.eventType) &&
          (filter.object === undefined || r.object === filter.object) &&
          (after === undefined || r.receivedAt.getTime() >= after) &&
          (before === undefined || r.receivedAt.getTime() <= before),
      );
    return { total: matching.length, page: matching.slice(skip, skip + limit) };
  }

  async triples(record: ReceivedNotificationRecord): Promise<Quad[]> {
    const entry = this.notifications.get(record.sequence);
    return entry ? payloadTriples(record.graph, readStoreNTriples(entry.ntriples)) : [];
  }

  /**
   * Every received notification as N-Quads of its graph, in arrival order (for exports, with nothing written
   * meanwhile).
   */
  *nquads(): Generator<{ graph: string; nquads: string }> {
    for (const { value } of this.notifications.all())
      yield {
        graph: value.record.graph,
        nquads: ntriplesInGraph(value.ntriples, value.record.graph),
      };
  }
}
