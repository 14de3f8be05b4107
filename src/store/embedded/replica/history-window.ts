/** A graph of the history window: a whole revision (with its metadata) or a finished action request. */
export interface WindowEntry {
  graph: string;
  quads: number;
  kind: 'revision' | 'request';
}

/**
 * The history the replica holds, bounded in quads: past `maxQuads`, the oldest entries leave.
 * Entries copied from the archive by a new replica come newest first and are older than any
 * written since, so they leave first, from the end of their list. A graph enters once.
 */
export class HistoryWindow {
  private readonly copied: WindowEntry[] = [];
  private live: WindowEntry[] = [];
  private head = 0;
  private quads = 0;
  private readonly graphs = new Set<string>();

  constructor(private readonly maxQuads: number) {}

  /** Whether the window holds anything at all (a bound of 0 turns history analytics off). */
  get open(): boolean {
    return this.maxQuads > 0;
  }

  has(graph: string): boolean {
    return this.graphs.has(graph);
  }

  addCopied(entry: WindowEntry): void {
    this.copied.push(entry);
    this.count(entry);
  }

  add(entry: WindowEntry): void {
    this.live.push(entry);
    this.count(entry);
  }

  private count(entry: WindowEntry): void {
    this.graphs.add(entry.graph);
    this.quads += entry.quads;
  }

  /** The oldest entries past the bound, taken out of the window. */
  overflow(): WindowEntry[] {
    const out: WindowEntry[] = [];
    while (this.quads > this.maxQuads) {
      const entry = this.copied.pop() ?? this.live[this.head++];
      if (!entry) break;
      this.quads -= entry.quads;
      this.graphs.delete(entry.graph);
      out.push(entry);
    }
    if (this.head > 1024 && this.head * 2 > this.live.length) {
      this.live = this.live.slice(this.head);
      this.head = 0;
    }
    return out;
  }
}
