import { BoundedCache } from '../../../bounded-cache.js';
import { namedNode, quad, quadToNq, tripleToNt, type Quad } from '../../../rdf/terms.js';
import { ArchiveCorruptError, type ArchiveDb } from './archive-db.js';
import {
  engineLatestQuads,
  revisionGraph,
  revisionQuads,
  type RevisionRecord,
  type WrittenRevision,
} from '../../schema/revisions.js';
import { readStoreNTriples } from '../../../rdf/ntriples.js';
import { toRevisionSubjects } from '../../schema/revision-subjects.js';

/**
 * One archived revision of a Logistics Object, under the key [object, number]. A revision is
 * stored as the change from the one before (`del`, `ins`: N-Triples lines), or whole (`full`)
 * when the chain of changes since the last whole copy grew as large as the revision itself, or
 * long: reading any revision then costs at most about twice its own size, never the object's
 * whole history.
 */
export interface ArchivedRevision {
  /** Creation time (epoch ms), author and most specific type: the revision's metadata. */
  at: number;
  by: string;
  type: string;
  /** The revision whose whole copy this one is read from (itself when `full` is set). */
  base: number;
  /** Length of the revision's N-Triples text. */
  size: number;
  /** Length of the changes from `base` up to this revision. */
  chain: number;
  full?: string;
  del?: string;
  ins?: string;
}

export type RevisionKey = [string, number];
type Key = RevisionKey;

/** Changes in one chain before a whole copy is written, however small they are. */
const MAX_CHAIN = 32;

/** Where an object's latest archived revision stands in its chain: what the next revision's entry is computed from. */
type ChainPosition = Pick<ArchivedRevision, 'base' | 'size' | 'chain'> & { number: number };

/**
 * Objects whose chain position is kept in memory (the most recently written): a change to one of them reads nothing
 * back from LMDB.
 */
const CHAIN_POSITIONS = 20_000;

/**
 * The history of every Logistics Object on disk (LMDB, a memory-mapped B+tree): every revision
 * ever written, including the latest, which the hot store (Oxigraph) also holds. It is derived
 * from journal records, whether live at the commit site or replayed at start: the same record
 * always makes the same entry, so replaying one the archive already holds only checks it.
 * It is one database of the archive (archive.ts).
 */
export class RevisionArchive {
  private readonly positions = new BoundedCache<string, ChainPosition>(CHAIN_POSITIONS);

  constructor(private readonly db: ArchiveDb<Key, ArchivedRevision>) {}

  private get(object: string, number: number): ArchivedRevision | undefined {
    return this.db.get([object, number]);
  }

  private put(object: string, number: number, entry: ArchivedRevision): void {
    this.db.put([object, number], entry);
  }

  /**
   * Archives the revisions a journal record writes (none for most records): live, right after
   * the record is applied to the hot store; at start, for every replayed record. Returns how many
   * entries it wrote (0 when they were there already).
   */
  applyRevisions(revisions: readonly WrittenRevision[]): number {
    let written = 0;
    for (const revision of revisions) if (this.archive(revision)) written += 1;
    return written;
  }

  private archive(w: WrittenRevision): boolean {
    // Records written before the archive existed: `migrateRevisionGraphs` archives those revisions from the hot store.
    if (w.whole) return false;
    const { object, number } = w.record;
    // Entries are written in number order and committed in that order: when this process wrote
    // the one before last, this one cannot be there, and LMDB is not asked.
    const existing = this.positions.get(object)?.number === number - 1 ? undefined : this.get(object, number);
    if (existing) {
      if (existing.at !== w.record.createdAt.getTime() || existing.by !== w.record.createdBy) {
        throw new ArchiveCorruptError(
          `the revision archive holds revision ${number} of ${object} with other metadata than the journal; restore ` +
            `the data directory from a backup`,
        );
      }
      return false;
    }
    const meta = { at: w.record.createdAt.getTime(), by: w.record.createdBy, type: w.record.mostSpecificType };
    let entry: ArchivedRevision;
    if (number === 1) {
      entry = { ...meta, base: 1, size: w.ins.length, chain: 0, full: w.ins };
    } else {
      const previous = this.position(object, number - 1);
      const size = previous.size - w.del.length + w.ins.length;
      const chain = previous.chain + w.del.length + w.ins.length;
      if (chain > size || number - previous.base >= MAX_CHAIN) {
        const lines = this.lines(object, number - 1, this.get(object, number - 1)!);
        applyLines(lines, w.del, w.ins);
        entry = { ...meta, base: number, size, chain: 0, full: joinLines(lines) };
      } else {
        entry = { ...meta, base: previous.base, size, chain, del: w.del, ins: w.ins };
      }
    }
    this.put(object, number, entry);
    // Deleted first, so that it counts as written last when the oldest are forgotten.
    this.positions.delete(object);
    this.positions.set(object, { number, base: entry.base, size: entry.size, chain: entry.chain });
    return true;
  }

  /** Where revision `number` of `object` stands in its chain, from memory if it was written lately. */
  private position(object: string, number: number): ChainPosition {
    const known = this.positions.get(object);
    if (known?.number === number) return known;
    const entry = this.get(object, number);
    if (!entry) {
      throw new ArchiveCorruptError(
        `the revision archive lacks revision ${number} of ${object}, which revision ${number + 1} changes; restore ` +
          `the data directory from a backup`,
      );
    }
    return { number, base: entry.base, size: entry.size, chain: entry.chain };
  }

  /**
   * Archives a whole revision given as N-Triples lines (data written before the archive existed); false if it is there
   * already.
   */
  archiveWhole(revision: RevisionRecord, lines: string): boolean {
    if (this.get(revision.object, revision.number)) return false;
    const at = revision.createdAt.getTime();
    this.positions.delete(revision.object);
    this.put(revision.object, revision.number, {
      at,
      by: revision.createdBy,
      type: revision.mostSpecificType,
      base: revision.number,
      size: lines.length,
      chain: 0,
      full: lines,
    });
    return true;
  }

  has(object: string, number: number): boolean {
    return this.db.has([object, number]);
  }

  /** The metadata of a revision, undefined if the archive does not hold it. */
  revision(object: string, number: number): RevisionRecord | undefined {
    const entry = this.get(object, number);
    return (
      entry && {
        object,
        number,
        graph: revisionGraph(object, number),
        createdAt: new Date(entry.at),
        createdBy: entry.by,
        mostSpecificType: entry.type,
      }
    );
  }

  /** The graph of every archived revision, written or being written. */
  graphs(): string[] {
    return this.db.keys().map((key) => revisionGraph(key[0], key[1]));
  }

  /** The N-Triples of a revision ('' if the archive does not hold it). */
  ntriples(object: string, number: number): string {
    const entry = this.get(object, number);
    return entry ? joinLines(this.lines(object, number, entry)) : '';
  }

  /** The metadata of every archived revision, as N-Triples lines of the metadata graph. */
  metadataNTriples(): string {
    return this.db
      .range(undefined, undefined, () => true)
      .flatMap(({ key }) => revisionQuads(this.revision(key[0], key[1])!).map(tripleToNt))
      .join('');
  }

  /** The triples of a revision (none if the archive does not hold it). */
  triples(object: string, number: number): Quad[] {
    const entry = this.get(object, number);
    if (!entry) return [];
    return readStoreNTriples(joinLines(this.lines(object, number, entry)));
  }

  /** The N-Triples lines of a revision: its chain's whole copy with the changes after it applied. */
  private lines(object: string, number: number, entry: ArchivedRevision): Set<string> {
    const base = entry.base === number ? entry : this.get(object, entry.base);
    if (!base?.full)
      throw new ArchiveCorruptError(`the revision archive lacks the whole copy of revision ${entry.base} of ${object}`);
    const lines = new Set(splitLines(base.full));
    for (let n = entry.base + 1; n <= number; n++) {
      const step = n === number ? entry : this.get(object, n);
      if (!step) throw new ArchiveCorruptError(`the revision archive lacks revision ${n} of ${object}`);
      applyLines(lines, step.del ?? '', step.ins ?? '');
    }
    return lines;
  }

  /**
   * Writes every revision of every object as N-Quads (each in its revision graph, its embedded nodes named as a SPARQL
   * engine keeps them: revision-subjects.ts, with its metadata), object by object in number order, and each object's
   * mark of its latest revision (which a SPARQL engine keeps); returns the number of lines written.
   */
  async exportRevisions(write: (text: string) => Promise<void>): Promise<number> {
    let lines = 0;
    let current = new Set<string>();
    let previous: RevisionRecord | undefined;
    for (const { key, value } of this.db.all()) {
      const [of, number] = key;
      const sameObject = previous?.object === of;
      if (value.full !== undefined) current = new Set(splitLines(value.full));
      else if (sameObject) applyLines(current, value.del ?? '', value.ins ?? '');
      else current = this.lines(of, number, value);
      const graph = namedNode(revisionGraph(of, number));
      const triples = toRevisionSubjects(readStoreNTriples(joinLines(current)), graph.value);
      const out = triples.map((t) => quadToNq(quad(t.subject, t.predicate, t.object, graph)));
      if (previous && !sameObject) out.push(...latestOf(previous));
      previous = this.revision(of, number)!;
      out.push(...revisionQuads(previous).map(quadToNq));
      lines += out.length;
      await write(out.join(''));
    }
    if (previous) {
      const last = latestOf(previous);
      await write(last.join(''));
      lines += last.length;
    }
    return lines;
  }
}

const latestOf = (r: RevisionRecord) => engineLatestQuads(r).map(quadToNq);

const splitLines = (text: string) => (text === '' ? [] : text.slice(0, -1).split('\n'));
const joinLines = (lines: Set<string>) => (lines.size === 0 ? '' : `${[...lines].join('\n')}\n`);

function applyLines(lines: Set<string>, del: string, ins: string): void {
  for (const line of splitLines(del)) lines.delete(line);
  for (const line of splitLines(ins)) lines.add(line);
}
