import { open, type RootDatabase } from 'lmdb';
import { ArchiveDb } from './archive-db.js';
import type { CommitRecord, CommitBytes } from '../../commit-record.js';
import type { Quad } from '../../../rdf/terms.js';
import { RequestArchive, type ArchivedRequest, type RequestByObjectKey, type RequestKey } from './request-archive.js';
import { RevisionArchive, type ArchivedRevision, type RevisionKey } from './revision-archive.js';
import { finishedGraphsIn } from '../../schema/finished-graphs.js';
import { revisionWritesIn, type WrittenRevision } from '../../schema/revisions.js';
import {
  NotificationArchive,
  type ArchivedNotification,
  type NotificationByKey,
  type NotificationIdKey,
  type NotificationKey,
} from './notification-archive.js';
import { isReceivedNotificationGraph } from '../../schema/received-notifications.js';

/** A graph a record finishes, with its final content as N-Triples. */
export interface FinishedGraph {
  graph: string;
  ntriples: string;
  /**
   * The record that finishes the graph also creates it (a new IRI): the archive cannot hold it yet, and the hot store
   * never held it.
   */
  created?: boolean;
  /**
   * The graph's triples as the commit that created it wrote them, in the order of its lines: read instead of its text.
   */
  triples?: readonly Quad[];
}

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
 * requests and the received notifications. Derived from journal records only, at the commit and again at start,
 * so the journal stays the one source of truth; `flushed()` resolves once what was written is durable
 * (docs/storage.md, "The revision archive").
 */
export class Archive {
  private failed: Error | undefined;

  private constructor(
    private readonly env: RootDatabase,
    private readonly dbs: Pick<ArchiveDb<never, never>, 'write'>[],
    readonly revisions: RevisionArchive,
    readonly requests: RequestArchive,
    readonly notifications: NotificationArchive,
  ) {}

  static open(path: string): Archive {
    const env = open({ path });
    const failed = { on: (err: Error) => void err };
    // Compressed: a decided request's N-Triples would otherwise spill into LMDB overflow pages.
    const dbs: Pick<ArchiveDb<never, never>, 'write'>[] = [];
    const db = <
      K extends RevisionKey | RequestKey | RequestByObjectKey | NotificationKey | NotificationIdKey | NotificationByKey,
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
      new RequestArchive(db<RequestKey, ArchivedRequest>('requests'), db<RequestByObjectKey, 1>('requests-by-object')),
      new NotificationArchive(
        db<NotificationKey, ArchivedNotification>('notifications'),
        db<NotificationIdKey, NotificationKey>('notification-ids'),
        db<NotificationByKey, 1>('notifications-by'),
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
    for (const { graph, ntriples, created, triples } of parts.finished) {
      if (isReceivedNotificationGraph(graph)) this.notifications.archive(graph, ntriples);
      else this.requests.archive(graph, ntriples, created, triples);
    }
    return { revisions, finished: parts.finished };
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
