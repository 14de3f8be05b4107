import { open, type RootDatabase } from 'lmdb';
import { ArchiveDb } from './archive-db.js';
import type { CommitRecord, CommitBytes } from '../../commit-record.js';
import {
  RequestArchive,
  type ArchivedRecord,
  type LegacyArchivedRequest,
  type RequestByObjectKey,
  type RequestByTimeKey,
  type RequestKey,
} from './request-archive.js';
import { RevisionArchive, type ArchivedRevision, type RevisionKey } from './revision-archive.js';
import { finishedGraphsIn, type FinishedGraph } from '../../schema/finished-graphs.js';
import { revisionWritesIn, type WrittenRevision } from '../../schema/revisions.js';
import {
  NotificationArchive,
  type ArchivedNotification,
  type NotificationByKey,
  type NotificationIdKey,
  type NotificationKey,
} from './notification-archive.js';
import { isReceivedNotificationGraph } from '../../schema/received-notifications.js';
import { EventArchive, type ArchivedEventRecord, type EventByAgentKey, type EventKey } from './event-archive.js';
import { store as bookkeeping } from '../../../rdf/vocab.js';

export type { FinishedGraph };

/** Named databases the environment may hold (LMDB's default, 12, is too few). */
const MAX_DBS = 32;

/** Requests of the older layout carried to today's per batch (splitLegacyRequests). */
const LEGACY_REQUESTS_PER_BATCH = 2_000;

/**
 * What the archive takes from a record: the revisions it writes and the graphs it finishes. Read
 * back from the record (`revisionWritesIn`, `finishedGraphsIn`) at replay; handed over by the commit
 * that built the record (recordFor), which holds the same values already, live.
 */
export interface ArchiveParts {
  revisions: readonly WrittenRevision[];
  finished: readonly FinishedGraph[];
}

/** The archive's parts of a record, read back from its text. */
const archivePartsOf = (record: CommitRecord | CommitBytes): ArchiveParts => ({
  revisions: revisionWritesIn(record),
  finished: finishedGraphsIn(record),
});

/** The archive's directory inside a data directory. */
export const ARCHIVE_DIR = 'archive';

/**
 * What the hot store no longer holds, on disk in one LMDB environment: every revision, the finished action
 * requests, the Logistics Events and the received notifications. Derived from journal records only, at the commit
 * and again at start, so the journal stays the one source of truth; `flushed()` resolves once what was written is
 * durable (docs/storage.md, "The revision archive").
 */
export class Archive {
  private failed: Error | undefined;

  private constructor(
    private readonly env: RootDatabase,
    private readonly dbs: Pick<ArchiveDb<never, never>, 'write'>[],
    readonly revisions: RevisionArchive,
    readonly requests: RequestArchive,
    readonly notifications: NotificationArchive,
    readonly events: EventArchive,
  ) {}

  static open(path: string): Archive {
    const env = open({ path, maxDbs: MAX_DBS });
    const failed = { on: (err: Error) => void err };
    // Compressed: a decided request's N-Triples would otherwise spill into LMDB overflow pages.
    const dbs: Pick<ArchiveDb<never, never>, 'write'>[] = [];
    const db = <
      K extends
        | RevisionKey
        | RequestKey
        | RequestByObjectKey
        | RequestByTimeKey
        | NotificationKey
        | NotificationIdKey
        | NotificationByKey
        | EventKey
        | EventByAgentKey,
      V,
    >(
      name: string,
    ) => {
      const made = new ArchiveDb<K, V>(env.openDB<V, K>({ name, compression: true }), (err) => failed.on(err));
      dbs.push(made);
      return made;
    };
    const archive = new Archive(
      env,
      dbs,
      new RevisionArchive(db<RevisionKey, ArchivedRevision>('revisions')),
      new RequestArchive({
        records: db<RequestByTimeKey, ArchivedRecord>('request-records'),
        times: db<RequestKey, number>('request-times'),
        graphs: db<RequestKey, string>('request-graphs'),
        byObject: db<RequestByObjectKey, 1>('requests-by-object'),
      }),
      new NotificationArchive(
        db<NotificationKey, ArchivedNotification>('notifications'),
        db<NotificationIdKey, NotificationKey>('notification-ids'),
        db<NotificationByKey, 1>('notifications-by'),
      ),
      new EventArchive(
        db<EventKey, ArchivedEventRecord>('event-records'),
        db<string, string>('event-graphs'),
        db<string, EventKey>('event-ids'),
        db<EventByAgentKey, 1>('events-by-agent'),
      ),
    );
    failed.on = (err) => {
      archive.failed ??= err;
    };
    return archive;
  }

  /**
   * Takes what a journal record gives the archive (`parts`, read from the record unless its commit
   * hands them over): the revisions it writes and the graphs it finishes. Returns how many
   * revisions were new and the graphs that left the hot store.
   */
  applyRecord(
    record: CommitRecord | CommitBytes,
    parts: ArchiveParts = archivePartsOf(record),
  ): { revisions: number; finished: readonly FinishedGraph[] } {
    const revisions = this.revisions.applyRevisions(parts.revisions);
    const eventMetadata = parts.finished.find((f) => f.graph === bookkeeping.eventsGraph);
    const events = eventMetadata && this.events.archive(eventMetadata, parts.finished);
    for (const { graph, ntriples, created, triples } of parts.finished) {
      if (graph === bookkeeping.eventsGraph || events?.has(graph)) continue;
      if (isReceivedNotificationGraph(graph)) this.notifications.archive(graph, ntriples);
      else this.requests.archive(graph, ntriples, created, triples);
    }
    return { revisions, finished: parts.finished };
  }

  /**
   * Old layout: finished requests archived with record and graph in one value (`requests`), which a list had to
   * decompress whole. Carried to today's databases once, a batch at a time; a batch's old entries go once its new
   * ones are on disk, so a start that stops midway carries the rest at the next. Returns how many moved.
   */
  async splitLegacyRequests(): Promise<number> {
    const legacy = this.env.openDB<LegacyArchivedRequest, RequestKey>({ name: 'requests', compression: true });
    let moved = 0;
    for (;;) {
      const batch = [...legacy.getRange({ limit: LEGACY_REQUESTS_PER_BATCH })];
      if (batch.length === 0) return moved;
      this.requests.takeLegacy(batch.map((entry) => entry.value));
      await this.flushed();
      await Promise.all(batch.map((entry) => legacy.remove(entry.key)));
      legacy.resetReadTxn();
      moved += batch.length;
    }
  }

  /** Resolves once every entry written so far is on disk; rejects if one could not be written. */
  async flushed(): Promise<void> {
    for (const db of this.dbs) db.write();
    await this.env.flushed;
    if (this.failed) throw new Error(`the archive could not be written: ${this.failed.message}`);
  }

  async close(): Promise<void> {
    for (const db of this.dbs) db.write();
    await this.env.close();
  }
}
