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
export const partText = (part: string | Uint8Array) => (typeof part === 'string' ? part : partBytes(part).toString('utf8'));

