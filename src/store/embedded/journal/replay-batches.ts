import { partText, type CommitRecord, type CommitBytes } from '../../commit-record.js';

/**
 * Folds consecutive journal records into batches, each one load of their insertions and one deletion of their
 * deletions, wherever that provably ends as applying them one by one would: a record at a time costs two Oxigraph
 * calls. The rule, its proof and why matching by text is safe: docs/storage.md, "Replay in batches".
 */

/** One step of a replay: N-Quads to load, then our N-Quads lines to delete. */
export interface ReplayBatch {
  insert: string;
  delete: string;
}

const IRI = '<[^\\x00-\\x20<>"{}|^`\\\\]*>';
/** Subject, predicate, IRI object | simple literal's text | other literal's suffix, graph (none: default graph). */
const STRICT_LINE = new RegExp(`^(${IRI}) (${IRI}) (?:(${IRI})|"([^"\\\\\\n\\r]*)"(\\S*)) (?:(${IRI}) )?\\.$`);

type Parsed =
  /** Not in the strict form: may be the same quad as any line. */
  | { kind: 'unknown' }
  /** Its text is the quad: another line in strict form is the same quad only if it is the same text. */
  | { kind: 'exact'; subject: string }
  /** A literal object: its subject, predicate and graph; `exact` when a simple literal without escapes. */
  | { kind: 'literal'; subject: string; exact: boolean; key: string };

function parse(line: string): Parsed {
  const m = STRICT_LINE.exec(line);
  if (!m) return { kind: 'unknown' };
  if (m[3] !== undefined) return { kind: 'exact', subject: m[1] };
  return { kind: 'literal', subject: m[1], exact: m[5] === '', key: `${m[1]} ${m[2]} ${m[6] ?? ''}` };
}

/**
 * A line's subject as text when it is an IRI written without escapes (its text is then the IRI):
 * a line whose subject no deleted line has cannot be a quad deleted. Cheaper than parsing the line.
 */
function subjectOf(line: string): string | undefined {
  if (line.charCodeAt(0) !== 0x3c) return undefined;
  const end = line.indexOf('>');
  if (end < 0 || line.lastIndexOf('\\', end) >= 0) return undefined;
  return line.slice(0, end + 1);
}

const COMMENT = 0x23; // '#'

class Batch {
  /** Each record's insertions as read, and their lines once split. */
  private readonly inserts: { part: string | Uint8Array; lines?: string[] }[] = [];
  private readonly deletes: string[] = [];
  /** Every line the batch deletes, as text. */
  private readonly deleted = new Set<string>();
  /**
   * Subject, predicate and graph of the literals it deletes: all of them, and those whose text does not prove their
   * value.
   */
  private readonly literals = new Set<string>();
  private readonly inexactLiterals = new Set<string>();
  /** The subjects of the lines it deletes in the strict form. */
  private readonly subjects = new Set<string>();
  /** It deletes a line not in the strict form. */
  private deletesUnknown = false;

  get empty(): boolean {
    return this.inserts.length === 0 && this.deletes.length === 0;
  }

  /**
   * Whether `record` inserts nothing that may be a quad this batch deletes (and its insertions' lines, when split to
   * tell).
   */
  admits(record: CommitRecord | CommitBytes): { ok: boolean; lines?: string[] } {
    if (this.deletes.length === 0 || record.insert.length === 0) return { ok: true };
    const lines = partText(record.insert).split('\n');
    for (const line of lines) {
      if (line === '' || line.charCodeAt(0) === COMMENT) continue;
      if (this.deletesUnknown) return { ok: false };
      const subject = subjectOf(line);
      if (subject !== undefined && !this.subjects.has(subject)) continue;
      if (this.deleted.has(line)) return { ok: false };
      const parsed = parse(line);
      if (parsed.kind === 'unknown') return { ok: false };
      if (
        parsed.kind === 'literal' &&
        (parsed.exact ? this.inexactLiterals.has(parsed.key) : this.literals.has(parsed.key))
      )
        return { ok: false };
    }
    return { ok: true, lines };
  }

  add(record: CommitRecord | CommitBytes, insertLines?: string[]): void {
    if (record.insert.length > 0) this.inserts.push({ part: record.insert, lines: insertLines });
    if (record.delete.length === 0) return;
    const text = partText(record.delete);
    this.deletes.push(text);
    for (const line of text.split('\n')) {
      if (line === '' || line.charCodeAt(0) === COMMENT) continue;
      this.deleted.add(line);
      const parsed = parse(line);
      if (parsed.kind === 'unknown') {
        this.deletesUnknown = true;
        continue;
      }
      this.subjects.add(parsed.subject);
      if (parsed.kind === 'literal') {
        this.literals.add(parsed.key);
        if (!parsed.exact) this.inexactLiterals.add(parsed.key);
      }
    }
  }

  /**
   * The batch as one load of one text (cheaper than many parts) and one deletion, leaving out
   * insertions it deletes again.
   */
  done(): ReplayBatch {
    const kept: string[] = [];
    for (const { part, lines } of this.inserts) {
      if (this.deleted.size === 0) {
        kept.push(partText(part));
        continue;
      }
      for (const line of lines ?? partText(part).split('\n'))
        if (line !== '' && !this.deleted.has(line)) kept.push(line);
    }
    // Every line ends in a newline: a part not ending its last line would run into the next.
    return { insert: kept.length === 0 ? '' : `${kept.join('\n')}\n`, delete: this.deletes.join('\n') };
  }
}

/** `records`, in order, as batches to apply in order (see above). */
export function replayBatches(records: readonly (CommitRecord | CommitBytes)[]): ReplayBatch[] {
  const out: ReplayBatch[] = [];
  let batch = new Batch();
  for (const record of records) {
    const { ok, lines } = batch.admits(record);
    if (!ok) {
      out.push(batch.done());
      batch = new Batch();
    }
    batch.add(record, ok ? lines : undefined);
  }
  if (!batch.empty) out.push(batch.done());
  return out;
}
