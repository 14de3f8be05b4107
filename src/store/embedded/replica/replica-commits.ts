/** One commit as the replica applies it: its journal record's bytes (N-Quads, UTF-8). */
export interface ReplicaCommit {
  insert: Uint8Array;
  delete: Uint8Array;
}

/**
 * Commits as they travel to the worker: their bytes in one buffer (one transfer per message, cheaper
 * for the sender than two per commit), and each commit's insert and delete lengths in turn.
 */
export interface PackedCommits {
  bytes: Uint8Array;
  lengths: number[];
}

/** Packs commits into one buffer of their own (their parts are views of journal buffers). */
export function packCommits(commits: readonly ReplicaCommit[]): PackedCommits {
  let total = 0;
  for (const c of commits) total += c.insert.byteLength + c.delete.byteLength;
  const bytes = new Uint8Array(total);
  const lengths: number[] = [];
  let at = 0;
  for (const c of commits) {
    bytes.set(c.insert, at);
    at += c.insert.byteLength;
    bytes.set(c.delete, at);
    at += c.delete.byteLength;
    lengths.push(c.insert.byteLength, c.delete.byteLength);
  }
  return { bytes, lengths };
}

/** The commits of `packed`, as views of its buffer. */
export function unpackCommits({ bytes, lengths }: PackedCommits): ReplicaCommit[] {
  const commits: ReplicaCommit[] = [];
  let at = 0;
  for (let i = 0; i < lengths.length; i += 2) {
    const deleteAt = at + lengths[i];
    const end = deleteAt + lengths[i + 1];
    commits.push({ insert: bytes.subarray(at, deleteAt), delete: bytes.subarray(deleteAt, end) });
    at = end;
  }
  return commits;
}
