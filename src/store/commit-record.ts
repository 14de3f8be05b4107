/**
 * One atomic change: N-Quads to delete, then N-Quads to insert (no quad in both). Replaying a
 * record sets each of its quads absent or present whatever the state before, which is what
 * lets a snapshot be taken while writes go on (see the embedded store's snapshot.ts).
 */
export interface CommitRecord {
  delete: string;
  insert: string;
}

/** A record as read back: its two parts as UTF-8 bytes, handed to Oxigraph without decoding them. */
export interface CommitBytes {
  delete: Uint8Array;
  insert: Uint8Array;
}

/** A stored record's part as a Buffer over the same bytes (no copy). */
export const partBytes = (part: Uint8Array) => Buffer.from(part.buffer, part.byteOffset, part.byteLength);

/** One part of a record (its deletions or insertions) as text. */
export const partText = (part: string | Uint8Array) =>
  typeof part === 'string' ? part : partBytes(part).toString('utf8');

const NEWLINE = 0x0a;

/** Whether a line starting with this character is a comment (an archive line, see finished-graphs.ts), not a quad. */
export const startsComment = (firstChar: number) => firstChar === 0x23; // '#'

/**
 * The lines of one part of a record whose first character `keep` accepts (a UTF-8 byte of a stored
 * part: lines start with ASCII, `<` or `#`), without their newline. A stored part is decoded line by
 * line, and only the lines kept: a string sliced from the decoded text of a whole part would keep
 * all of it alive for as long as the slice is kept (an archived request's IRI is kept until LMDB
 * has committed it, long enough to move the whole record's text into V8's old generation).
 */
export function partLines(part: string | Uint8Array, keep: (firstChar: number) => boolean): string[] {
  if (typeof part === 'string') return part.split('\n').filter((line) => line !== '' && keep(line.charCodeAt(0)));
  const data = partBytes(part);
  const lines: string[] = [];
  for (let at = 0; at < data.length; ) {
    let end = data.indexOf(NEWLINE, at);
    if (end < 0) end = data.length;
    if (end > at && keep(data[at])) lines.push(data.toString('utf8', at, end));
    at = end + 1;
  }
  return lines;
}
