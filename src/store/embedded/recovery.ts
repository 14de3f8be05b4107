import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { store as bookkeeping } from '../../rdf/vocab.js';
import { iriToNt, namedNode, quad, type Quad } from '../../rdf/terms.js';
import { readStoreNTriples } from '../../rdf/ntriples.js';
import { entryOf } from '../../map-entry.js';
import type { CommitBytes } from '../commit-record.js';
import { MOVE_DATA } from '../capacity.js';
import { StoreTooLargeError } from '../errors.js';
import { isReceivedNotificationGraph } from '../schema/received-notifications.js';
import { readRevisions, RevisionMetadata, type RevisionRecord } from '../schema/revisions.js';
import { Archive, ARCHIVE_DIR } from './archive/archive.js';
import { ArchiveCorruptError } from './archive/archive-db.js';
import { migrateRevisionGraphs, type MigrationRecord } from './archive/history-migration.js';
import { takeToArchive } from './archive-handover.js';
import { takeImage, type ImageOptions } from './image/image-lifecycle.js';
import { removeIndexImage, storePosition } from './image/index-image.js';
import { recoverJournal, removeSegmentsBefore, type Journal } from './journal/journal.js';
import { replayBatches } from './journal/replay-batches.js';
import { WASM_MEMORY_LIMIT_BYTES, type OxigraphIndex } from './oxigraph/oxigraph-index.js';
import { latestSnapshot, loadSnapshot, removeSnapshotsBefore } from './snapshot/snapshot.js';

/** Revisions of the hot store whose presence in the archive a start checks (verifyArchive). */
const ARCHIVE_SAMPLE = 1000;

/**
 * Received notifications of data written before they were archived, moved out of the hot store per commit
 * (moveReceivedNotifications).
 */
const LEGACY_NOTIFICATIONS_PER_COMMIT = 500;

/** Logistics Events of data written before they were archived, moved out of the hot store per commit (moveEvents). */
const LEGACY_EVENTS_PER_COMMIT = 500;

export interface RecoveryOptions extends ImageOptions {
  capacityQuads: number;
}

/** What a start found in the data directory. */
export interface Recovered {
  archive: Archive;
  /** The journal segment to write on, and the records replayed. */
  journal: { segment: number; records: number };
  /** The revision metadata of the hot store, read once. */
  revisions: RevisionRecord[];
  /** The revision graphs of data written before the archive, still to leave the hot store (appendRevisionMigration). */
  migration: { moved: number; records: MigrationRecord[] };
  quads: number;
}

/**
 * Loads the newest snapshot into `index`, or the memory image that reflects it, and replays the
 * journal from its segment on; `found` is told the snapshot. Files older than the snapshot are
 * leftovers of a run that stopped before it could remove them.
 */
export async function recoverDataDir(
  index: OxigraphIndex,
  options: RecoveryOptions,
  found: (snapshot: number) => Promise<void>,
): Promise<Recovered> {
  const { dataDir } = options;
  await mkdir(dataDir, { recursive: true });
  const archive = Archive.open(join(dataDir, ARCHIVE_DIR));
  const split = await archive.splitLegacyRequests();
  if (split > 0) options.log(`request archive: ${split} finished requests carried to records kept apart from graphs`);
  const snapshot = await latestSnapshot(dataDir);
  const from = snapshot ?? 1;
  const image = await takeImage(index, await storePosition(dataDir, snapshot), options);
  // Records the image does not reflect change the revision metadata it carries: brought up to date with each one
  // replayed.
  const metadata = image?.ofSnapshot ? new RevisionMetadata(image.revisions) : undefined;
  const journal = await loadAndReplay(
    index,
    archive,
    { snapshot, imageLoaded: image !== undefined, metadata },
    options,
    found,
  );
  // The image of a snapshot stays: it reflects the newest snapshot until the next one replaces it.
  // Any other goes: a clean stop's (the journal grows from here on), one stale, damaged or turned off.
  await removeIndexImage(dataDir, image?.ofSnapshot === true);
  const migration = migrateRevisionGraphs(index, archive.revisions);
  const revisions = metadata?.records() ?? image?.revisions ?? readRevisions(index);
  verifyArchive(archive, revisions);
  await removeSegmentsBefore(dataDir, from);
  await removeSnapshotsBefore(dataDir, from);
  // Records replayed over an image it already reflects change nothing: it holds the quads it held.
  const quads = image && (!image.ofSnapshot || journal.records === 0) ? image.quads : index.size;
  logRecovered(options, snapshot, journal.records, quads);
  return { archive, journal, revisions, migration, quads };
}

/** Where a start loads from: the snapshot (unless an image was loaded), the revision metadata replay keeps. */
interface LoadFrom {
  snapshot: number | undefined;
  imageLoaded: boolean;
  metadata: RevisionMetadata | undefined;
}

/**
 * Loads the snapshot unless the memory image was loaded, then replays the journal from the
 * snapshot's segment on, carrying to the archive what each record finishes.
 */
async function loadAndReplay(
  index: OxigraphIndex,
  archive: Archive,
  { snapshot, imageLoaded, metadata }: LoadFrom,
  options: RecoveryOptions,
  found: (snapshot: number) => Promise<void>,
): Promise<Recovered['journal']> {
  const { dataDir, log } = options;
  let archived = 0;
  try {
    if (!imageLoaded && snapshot !== undefined) {
      await loadSnapshot(index, dataDir, snapshot, (bytes) => roomToLoad(index, bytes, options));
    }
    if (snapshot !== undefined) await found(snapshot);
    const journal = await recoverJournal(dataDir, snapshot ?? 1, log, (records) => {
      replay(index, records, options);
      for (const record of records) {
        archived += takeToArchive(index, archive, record);
        metadata?.apply(record);
      }
    });
    if (archived > 0) log(`revision archive: ${archived} revisions restored from the journal`);
    return journal;
  } catch (err) {
    // A trap inside Oxigraph while loading is its memory running out where the estimate missed it.
    if (err instanceof WebAssembly.RuntimeError)
      throw tooLarge(options, `Oxigraph failed while loading it (${err.message})`);
    throw err;
  }
}

/** Says what a start loaded, and whether the store is at its capacity already. */
function logRecovered(options: RecoveryOptions, snapshot: number | undefined, records: number, quads: number): void {
  const { log, capacityQuads } = options;
  if (snapshot !== undefined || records > 0) {
    log(`store recovered: snapshot ${snapshot ?? 'none'}, ${records} journal records, ${quads} quads`);
  }
  if (quads >= capacityQuads) {
    log(
      `the store holds ${quads} quads, at or past its capacity of ${capacityQuads} (store.capacityQuads): ` +
        `writes are refused with 507, reads go on. ${MOVE_DATA}`,
    );
  }
}

/** Applies records in order, folded into batches where that gives the same store (replay-batches.ts): much faster. */
function replay(index: OxigraphIndex, records: CommitBytes[], options: RecoveryOptions): void {
  roomToLoad(
    index,
    records.reduce((sum, r) => sum + r.insert.length, 0),
    options,
  );
  for (const batch of replayBatches(records)) index.apply(batch);
}

/** Stops the start, before Oxigraph runs out of memory, when `bytes` more of the data directory do not fit. */
function roomToLoad(index: OxigraphIndex, bytes: number, options: RecoveryOptions): void {
  // Loading in chunks of megabytes needs more room than admitting a record at a time did, so start
  // keeps half the reserve free and a store filled to its limit restarts; later writes keep all of it.
  if (index.makeRoom(bytes, options.memoryReserveBytes / 2)) return;
  throw tooLarge(
    options,
    `after ${index.size} quads, Oxigraph's WASM memory (at most ${WASM_MEMORY_LIMIT_BYTES / 2 ** 30} GiB) cannot ` +
      `take the next ` +
      `${bytes} bytes and keep store.memoryReserveBytes (${options.memoryReserveBytes}) free`,
  );
}

function tooLarge(options: RecoveryOptions, why: string): StoreTooLargeError {
  return new StoreTooLargeError(
    `the data directory ${options.dataDir} holds more than the embedded store can load: ${why}. Nothing on disk was ` +
      `changed. ${MOVE_DATA}`,
  );
}

/**
 * Every revision the hot store knows of must be in the archive after replay, else it was lost or holds other data.
 * A crash cannot leave one out, so a sample (ARCHIVE_SAMPLE, first and last included) is checked rather than one
 * lookup per object: a lost or foreign archive lacks nearly all (docs/storage.md, "Start and snapshots").
 */
function verifyArchive(archive: Archive, all: readonly RevisionRecord[]): void {
  const every = Math.max(1, Math.floor(all.length / ARCHIVE_SAMPLE));
  const revisions = all.filter((_, i) => i % every === 0 || i === all.length - 1);
  for (const r of revisions) {
    if (!archive.revisions.has(r.object, r.number)) {
      throw new ArchiveCorruptError(
        `the revision archive (${ARCHIVE_DIR}/) lacks revision ${r.number} of ${r.object}, which the store holds; ` +
          `refusing to start. Restore the data directory from a backup.`,
      );
    }
  }
}

/**
 * Old layout: the revision graphs of data written before the archive leave the hot store, once,
 * through the journal. The archive holds the revisions before the journal says the hot store no
 * longer does.
 */
export async function appendRevisionMigration(
  index: OxigraphIndex,
  archive: Archive,
  journal: Journal,
  migration: Recovered['migration'],
  log: (message: string) => void,
): Promise<void> {
  await archive.flushed();
  for (const { emptied, ...record } of migration.records) {
    await journal.append(record, (stored) => {
      index.apply(stored);
      index.dropGraphs(emptied);
    });
  }
  log(`revision archive: ${migration.moved} revisions of data written before it moved out of the hot store`);
}

/**
 * Old layout: received notifications of data written before they were kept out of the hot store
 * leave it, once: commits that finish their graphs (`finish`, WriteTransaction.finished) delete
 * them from the hot store and carry them to the archive, a few hundred at a time.
 */
export async function moveReceivedNotifications(
  index: OxigraphIndex,
  finish: (graphs: string[]) => Promise<void>,
  log: (message: string) => void,
): Promise<void> {
  const rows = index.select(
    `SELECT DISTINCT ?g WHERE { GRAPH ?g { ?g ${iriToNt(bookkeeping.receivedNotification)} ?n } }`,
  ).results.bindings;
  const graphs = rows.map((row) => row.g.value).filter(isReceivedNotificationGraph);
  for (let i = 0; i < graphs.length; i += LEGACY_NOTIFICATIONS_PER_COMMIT)
    await finish(graphs.slice(i, i + LEGACY_NOTIFICATIONS_PER_COMMIT));
  if (graphs.length > 0) log(`received notifications: ${graphs.length} moved out of the hot store to the archive`);
}

/**
 * Old layout: Logistics Events of data written before they were kept out of the hot store leave it, once: commits
 * (`move`, event-archive.ts moveEventsOut) take their metadata and graphs to the archive, a few hundred at a time.
 */
export async function moveEvents(
  index: OxigraphIndex,
  move: (metadata: Quad[], graphs: string[]) => Promise<void>,
  log: (message: string) => void,
): Promise<void> {
  const g = namedNode(bookkeeping.eventsGraph);
  const metadata = new Map<string, Quad[]>();
  for (const t of readStoreNTriples(index.graphNTriples(bookkeeping.eventsGraph)))
    entryOf(metadata, t.subject.value, () => []).push(quad(t.subject, t.predicate, t.object, g));
  const events = [...metadata.keys()];
  for (let i = 0; i < events.length; i += LEGACY_EVENTS_PER_COMMIT) {
    const graphs = events.slice(i, i + LEGACY_EVENTS_PER_COMMIT);
    await move(
      graphs.flatMap((e) => metadata.get(e)!),
      graphs,
    );
  }
  if (events.length > 0) log(`Logistics Events: ${events.length} moved out of the hot store to the archive`);
}
