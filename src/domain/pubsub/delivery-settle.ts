import type { Quad } from '../../rdf/terms.js';
import {
  compactedThroughQuad,
  deadLetterQuads,
  movedQueuePosition,
  outboxEntryGraph,
  outboxEntryQuads,
  parkedNotificationQuads,
  type DeadLetter,
  type OutboxEntry,
  type ParkedNotification,
} from '../../store/schema/outbox.js';
import type { DomainEvent, WriteTransaction } from '../../store/transaction.js';
import { groupName, queueGroup, type DeliveryGroup } from './delivery-groups.js';
import type { SettleWriter } from './settle-batches.js';

/** At most this many entries are removed in one commit. */
const COMPACT_BATCH = 1000;
/**
 * Settle commits are at least this far apart (more while API requests are being answered): each
 * records every queue that moved meanwhile, so a queue that moved many times is written once, and
 * removes the entries every queue is past in one go. (After a crash, what was delivered since the
 * last one is sent again: duplicates, which subscribers drop by @id.)
 */
const SETTLE_INTERVAL_MS = 50;
const SETTLE_INTERVAL_WHILE_SERVING_MS = 250;
/**
 * A queue's position is written only once it is this many entries past those removed, so queues that keep up
 * together cost no write per entry; after a crash such a queue receives these entries again at most, duplicates
 * dropped by @id (docs/delivery.md, "How the outbox works").
 */
const POSITION_SLACK = 16;

/** A notification given up on, to be written as a dead letter (with its own graph unless it already has one). */
export interface DeadLetterToWrite {
  parked: ParkedNotification;
  /** The notification's triples, for a new parked graph (none for a replayed dead letter, whose graph is there). */
  triples: readonly Quad[];
  dead: DeadLetter;
  isNew: boolean;
}

/** What the settle commits need of the rest of delivery. */
export interface SettleSources {
  /** The highest entry number no queue still needs (the outbox may remove the entries up to it). */
  lowWater(): number;
  /** The highest entry number a recorded queue position, or the entries removed, may reach. */
  recordCap(): number;
  /** Entry `sequence` if read already (null: no longer in the store; undefined: not known). */
  knownEntry(sequence: number): OutboxEntry | null | undefined;
  /** True while API requests are being answered. */
  serving(): boolean;
  /** The backoff after the settle commit failed `failures` times in a row. */
  backoffMs(failures: number): number;
  log(message: string): void;
}

/**
 * Where every queue of the outbox stands, and the one commit at a time, in a later tick, that records what was
 * settled meanwhile (positions, dead letters, replayed ones delivered, entries every queue is past). A failed
 * commit is retried, after a backoff, by the next; a crash before it only sends notifications again, which
 * receivers drop by @id (ONE Record API, "Events", Delivery model; docs/delivery.md, "How the outbox works").
 */
export class SettleCommits {
  /** Per queue, the entry up to which it settled everything, in memory and as last committed. */
  private readonly positions = new Map<string, number>();
  private readonly storedPositions = new Map<string, number>();
  /** Queues whose position in memory differs from the stored one. */
  private readonly moved = new Set<string>();
  /** Of those, queues whose position went back: written whatever the slack. */
  private readonly rewound = new Set<string>();
  /** Highest entry number published so far. */
  private latest = 0;
  /** Entries up to this number are gone from the store (undefined: none seen yet). */
  private removedThrough: number | undefined;
  /** With a group: the position of every group of its count, as stored. */
  private readonly groupPositions = new Map<string, number>();
  /** With a group: its name, and the names of every group of its count. */
  private readonly groupNames: { own: string; all: readonly string[] } | undefined;
  /** What the next settle commit writes, besides the queues' positions. */
  private parkedToRemove: ParkedNotification[] = [];
  private deadToWrite: DeadLetterToWrite[] = [];
  /** Entries published after the entries up to them were removed. */
  private entriesToRemove: number[] = [];
  private scheduled = false;
  /** The settle commit under way. */
  private settlement?: Promise<void>;
  private failures = 0;
  private lastSettleAt = 0;
  private closed = false;

  constructor(
    private readonly store: SettleWriter,
    private readonly sources: SettleSources,
    /**
     * The group of queues this delivery has (several processes delivering): its settle commits record the group's
     * position; those of group 0 also remove the entries every group is past.
     */
    private readonly group?: DeliveryGroup,
  ) {
    if (group)
      this.groupNames = {
        own: groupName(group),
        all: Array.from({ length: group.count }, (_, index) => groupName({ index, count: group.count })),
      };
  }

  /** Highest entry number published so far. */
  get lastSequence(): number {
    return this.latest;
  }

  /** Entries up to this number are gone from the store (undefined: none seen yet). */
  get compactedThrough(): number | undefined {
    return this.removedThrough;
  }

  /** The last settle commit is done: nothing reads or writes the store any more. */
  get stopped(): boolean {
    return this.closed;
  }

  /**
   * The entry up to which `queue` settled everything: without a recorded position, the entries
   * removed (every queue was past them; a position is recorded only further on, see POSITION_SLACK).
   */
  position(queue: string): number {
    return this.positions.get(queue) ?? this.floor ?? 0;
  }

  /** Where the queues without a position of their own stand: the entries removed, or the group's position past them. */
  private get floor(): number | undefined {
    const own = this.groupNames && this.groupPositions.get(this.groupNames.own);
    return own === undefined ? this.removedThrough : Math.max(own, this.removedThrough ?? 0);
  }

  /** `queue` settled everything up to entry `through`: recorded by a later settle commit. */
  moveTo(queue: string, through: number): void {
    if (through <= this.position(queue)) return;
    this.positions.set(queue, through);
    this.moved.add(queue);
  }

  /**
   * `queue` has a notification of entry `through + 1` again (published after later ones it settled):
   * its position goes back, written by the next settle commit, so that a restart sends it (and
   * those after it again: duplicates).
   */
  rewind(queue: string, through: number): void {
    if (through >= this.position(queue)) return;
    this.positions.set(queue, through);
    this.moved.add(queue);
    this.rewound.add(queue);
    this.schedule();
  }

  /** A replayed dead letter was delivered (or dropped): its graph goes. */
  removeParked(parked: ParkedNotification): void {
    this.parkedToRemove.push(parked);
  }

  deadLetter(dead: DeadLetterToWrite): void {
    this.deadToWrite.push(dead);
  }

  /**
   * Entry `sequence`'s graph goes with the next settle commit (one every queue was past, left behind by its removal).
   */
  removeEntry(sequence: number): void {
    this.entriesToRemove.push(sequence);
    this.schedule();
  }

  /** Follows the after-commit stream: entries published, positions and removals committed. */
  onCommitted(e: DomainEvent): void {
    switch (e.kind) {
      case 'notification-queued':
        this.latest = Math.max(this.latest, e.entry.sequence);
        this.removedThrough ??= e.entry.sequence - 1;
        break;
      case 'outbox-advanced':
        this.storedPositions.set(e.queue, e.through);
        if (e.through >= this.position(e.queue)) {
          this.positions.set(e.queue, e.through);
          this.moved.delete(e.queue);
          this.rewound.delete(e.queue);
        }
        // Another group's delivery (another process, maybe further along the feed) says nothing of the entries this
        // one was handed: taken as the highest entry known, it could move this group's position past them unseen.
        if (!this.group || queueGroup(e.queue, this.group.count) === this.group.index)
          this.latest = Math.max(this.latest, e.through);
        break;
      case 'outbox-compacted':
      case 'outbox-group-advanced':
        if (e.kind === 'outbox-compacted') this.removedThrough = Math.max(this.removedThrough ?? 0, e.through);
        else if (this.groupNames?.all.includes(e.group))
          this.groupPositions.set(e.group, Math.max(this.groupPositions.get(e.group) ?? 0, e.through));
        // Positions up to the floor need no write: no queue of this delivery can be behind it.
        for (const queue of this.moved)
          if (this.positions.get(queue)! <= this.floor! && !this.rewound.has(queue)) this.moved.delete(queue);
        if (e.kind === 'outbox-compacted' || e.group === this.groupNames?.own)
          this.latest = Math.max(this.latest, e.through);
        break;
      default:
        break;
    }
  }

  /** A settle commit in a later tick (after `delay`, or once the interval since the last one has passed). */
  schedule(delay = 0): void {
    if (this.scheduled) return;
    this.scheduled = true;
    const run = () => {
      this.scheduled = false;
      if (this.settlement || this.closed) return;
      void this.settle(POSITION_SLACK);
    };
    const wait =
      delay > 0
        ? delay
        : this.lastSettleAt +
          (this.sources.serving() ? SETTLE_INTERVAL_WHILE_SERVING_MS : SETTLE_INTERVAL_MS) -
          Date.now();
    if (wait > 0) setTimeout(run, wait);
    else setImmediate(run);
  }

  /** Records where every queue stands (a restart sends nothing delivered again), then touches the store no more. */
  async stop(): Promise<void> {
    // One settle commit at a time: the last one starts in the tick the one before it ended in.
    while (this.settlement !== undefined) await this.settlement;
    if (!this.closed) await this.settle(0);
    this.closed = true;
  }

  /**
   * Commits what was settled (positions more than `slack` entries past the entries removed); resolves when done,
   * whether it succeeded or not.
   */
  private settle(slack: number): Promise<void> {
    // Looking costs a pass over the queues that moved: no more often than a commit, even when there is nothing to
    // write.
    this.lastSettleAt = Date.now();
    const tx = this.transaction(slack);
    if (!tx) return Promise.resolve();
    const [parked, dead, entries] = [this.parkedToRemove, this.deadToWrite, this.entriesToRemove];
    this.parkedToRemove = [];
    this.deadToWrite = [];
    this.entriesToRemove = [];
    this.settlement = this.store.commit(tx).then(
      () => {
        this.settlement = undefined;
        this.failures = 0;
        const { floor, removeTo } = this.targets();
        const removable = floor.to > floor.from || removeTo > (this.removedThrough ?? this.latest);
        if (
          this.parkedToRemove.length > 0 ||
          this.deadToWrite.length > 0 ||
          this.entriesToRemove.length > 0 ||
          removable ||
          this.positionsToWrite(floor.from, POSITION_SLACK, 1).length > 0
        )
          this.schedule();
      },
      (err: Error) => {
        this.settlement = undefined;
        this.failures += 1;
        this.parkedToRemove.unshift(...parked);
        this.deadToWrite.unshift(...dead);
        this.entriesToRemove.unshift(...entries);
        this.sources.log(`the outbox could not record what was delivered; retrying: ${err.message}`);
        this.schedule(this.sources.backoffMs(this.failures) + 1);
      },
    );
    return this.settlement;
  }

  /**
   * The queues that moved whose position is to be written, once the entries up to `removedThrough`
   * are removed (see POSITION_SLACK); the first `limit` of them (asked after each commit, whether
   * there is any: a pass over 1,000 queues 20 times a second while a fan-out drains).
   */
  private positionsToWrite(removedThrough: number, slack: number, limit = Infinity): string[] {
    // A queue whose dead letter this commit writes gets its position in it too: after a crash it must not send that
    // notification again.
    const deadLettering = new Set(this.deadToWrite.map((d) => d.parked.queue));
    const cap = this.sources.recordCap();
    const due: string[] = [];
    for (const queue of this.moved) {
      if (due.length >= limit) break;
      const through = this.recordable(queue, cap);
      if (through === this.storedPositions.get(queue)) continue;
      if (through > removedThrough + slack || deadLettering.has(queue) || this.rewound.has(queue)) due.push(queue);
    }
    return due;
  }

  /** The position of `queue` to record: where it stands, or `cap` (SettleSources.recordCap) if lower. */
  private recordable(queue: string, cap: number): number {
    return Math.min(this.positions.get(queue)!, cap);
  }

  /**
   * Where the floor (see `position`) may move: from where it stands to what every queue of this delivery is past; and
   * up to where the entries may be removed now (alone: the floor; with groups, group 0: where every group is).
   */
  private targets(): { floor: { from: number; to: number }; removeTo: number } {
    const removed = this.removedThrough ?? this.latest;
    const settled = Math.min(this.sources.lowWater(), this.sources.recordCap());
    if (!this.groupNames)
      return { floor: { from: removed, to: settled }, removeTo: Math.min(settled, removed + COMPACT_BATCH) };
    const from = this.floor ?? this.latest;
    const floor = { from, to: settled };
    if (this.group!.index !== 0) return { floor, removeTo: removed };
    let removeTo = Math.min(Math.max(from, settled), removed + COMPACT_BATCH);
    for (const name of this.groupNames.all)
      if (name !== this.groupNames.own) removeTo = Math.min(removeTo, this.groupPositions.get(name) ?? removed);
    return { floor, removeTo };
  }

  private transaction(slack: number): WriteTransaction | undefined {
    const tx = this.store.begin();
    const from = this.removedThrough ?? this.latest;
    const cap = this.sources.recordCap();
    const { floor, removeTo: to } = this.targets();
    // Where the floor stands after this commit: the queues at or below it need no position of their own.
    const floorAfter = this.groupNames ? Math.max(floor.from, floor.to) : Math.max(from, to);
    for (const queue of this.positionsToWrite(floorAfter, slack)) {
      const through = this.recordable(queue, cap);
      const moved = movedQueuePosition(queue, this.storedPositions.get(queue) ?? 0, through);
      tx.delete.push(...moved.delete);
      tx.insert.push(...moved.insert);
      tx.events.push({ kind: 'outbox-advanced', queue, through });
    }
    if (this.groupNames && floor.to > floor.from) {
      const { own } = this.groupNames;
      const moved = movedQueuePosition(own, this.groupPositions.get(own) ?? 0, floor.to, 'group');
      tx.delete.push(...moved.delete);
      tx.insert.push(...moved.insert);
      tx.events.push({ kind: 'outbox-group-advanced', group: own, through: floor.to });
    }
    for (const parked of this.parkedToRemove) {
      tx.removedGraphs.push(parked.graph);
      tx.events.push({ kind: 'notification-settled', notification: parked });
    }
    for (const sequence of this.entriesToRemove) tx.removedGraphs.push(outboxEntryGraph(sequence));
    for (const { parked, triples, dead, isNew } of this.deadToWrite) {
      if (isNew) tx.insert.push(...parkedNotificationQuads(parked, triples));
      tx.insert.push(...deadLetterQuads(parked, dead));
      tx.events.push({ kind: 'notification-dead-lettered', notification: parked, dead });
    }
    if (to > from) {
      for (let sequence = from + 1; sequence <= to; sequence++) {
        const known = this.sources.knownEntry(sequence);
        if (known) {
          tx.delete.push(...outboxEntryQuads(known));
          tx.emptiedGraphs.push(outboxEntryGraph(sequence));
        } else if (known === undefined) tx.removedGraphs.push(outboxEntryGraph(sequence));
      }
      if (from > 0) tx.delete.push(compactedThroughQuad(from));
      tx.insert.push(compactedThroughQuad(to));
      tx.events.push({ kind: 'outbox-compacted', through: to });
    }
    return tx.events.length > 0 || tx.removedGraphs.length > 0 ? tx : undefined;
  }
}
