import { JournalCorruptError, readJournal, segmentName } from '../journal/journal.js';
import type { CommitBytes } from '../../commit-record.js';
import { OxigraphIndex } from '../oxigraph/oxigraph-index.js';
import { readSnapshot } from '../snapshot/snapshot.js';

/** What to fold: snapshot `snapshot` (if any), then journal segments `from` up to `to` (exclusive; all when absent). */
export interface FoldRange {
  snapshot?: number;
  from: number;
  to?: number;
}

export interface Folded {
  /** N-Quads lines written (a quad inserted again while present is written twice). */
  lines: number;
  records: number;
  /** The torn last record left out (only when `tornTail` is 'drop'). */
  droppedTail?: string;
}

/**
 * The lines of N-Quads text as Oxigraph writes the quads it stores. Oxigraph keeps typed values,
 * not lexical forms ("01"^^xsd:integer is stored as 1), so two lines that differ in text can be one
 * stored quad: comparing lines is only right once both are in this form. Snapshots hold only such lines.
 */
function canonicalLines(parts: Uint8Array[]): string[] {
  const scratch = new OxigraphIndex();
  try {
    scratch.loadTrusted(parts);
    const lines = scratch.nQuads().split('\n');
    lines.pop();
    return lines;
  } finally {
    scratch.free();
  }
}

function countLines(data: Buffer): number {
  let count = 0;
  for (let at = data.indexOf(0x0a); at >= 0; at = data.indexOf(0x0a, at + 1)) count += 1;
  return count;
}

/**
 * Streams the state a data directory holds (`range` loaded into one store) as N-Quads without loading it, so
 * memory stays small: the snapshot's lines, then each record's insertions without the lines a later record
 * deletes (docs/storage.md, "Start and snapshots"). `tornTail`: a damaged last record of the last segment is
 * dropped (as at start) or refused.
 */
export async function foldDataDirectory(
  dir: string,
  range: FoldRange,
  write: (data: Buffer) => Promise<void>,
  tornTail: 'drop' | 'refuse',
): Promise<Folded> {
  const lastDelete = new Map<string, number>();
  let position = 0;
  const first = await readJournal(dir, range, (records: CommitBytes[]) => {
    for (const record of records) {
      if (record.delete.length > 0) for (const line of canonicalLines([record.delete])) lastDelete.set(line, position);
      position += 1;
    }
  });
  if (first.tail && tornTail === 'refuse') {
    throw new JournalCorruptError(
      `journal ${segmentName(first.tail.segment)} ends in ${first.tail.scan.damagedTail} at byte ` +
        `${first.tail.scan.validBytes}`,
    );
  }
  let lines = 0;
  const writeLines = async (kept: string[]) => {
    if (kept.length === 0) return;
    lines += kept.length;
    await write(Buffer.from(`${kept.join('\n')}\n`));
  };
  if (range.snapshot !== undefined) {
    await readSnapshot(dir, range.snapshot, async (body) => {
      if (lastDelete.size === 0) {
        lines += countLines(body);
        await write(body);
        return;
      }
      const text = body.toString('utf8').split('\n');
      text.pop();
      await writeLines(text.filter((line) => !lastDelete.has(line)));
    });
  }
  position = 0;
  const second = await readJournal(dir, range, async (records: CommitBytes[]) => {
    const kept: string[] = [];
    let run: Uint8Array[] = [];
    let runStart = 0;
    // A run of records that only insert: no record in it deletes, so a line is left out only if a record after the run
    // deletes it.
    const endRun = () => {
      if (run.length > 0)
        for (const line of canonicalLines(run)) if ((lastDelete.get(line) ?? -1) <= runStart) kept.push(line);
      run = [];
    };
    for (const record of records) {
      if (record.delete.length === 0) {
        if (run.length === 0) runStart = position;
        run.push(record.insert);
      } else {
        endRun();
        if (record.insert.length > 0)
          for (const line of canonicalLines([record.insert]))
            if ((lastDelete.get(line) ?? -1) < position) kept.push(line);
      }
      position += 1;
    }
    endRun();
    await writeLines(kept);
  });
  if (second.records !== first.records)
    throw new Error(
      `the journal changed while it was read (${first.records} records, then ${second.records}): stop the server ` +
        `that writes it`,
    );
  return { lines, records: first.records, droppedTail: first.tail?.scan.damagedTail };
}
