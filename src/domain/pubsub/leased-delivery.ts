import type { Lease } from '../../store/lease.js';
import type { DomainEvent } from '../../store/transaction.js';
import type { Delivery, OutboxDepth, QueueView } from './delivery.js';
import type { DeliveryGroup } from './delivery-groups.js';

/** After a failed read of the outbox at the start of a turn, the next try (while the lease is held). */
const TAKE_RETRY_MS = 1000;

/** What the delivery of one lease's queues needs besides the lease. */
interface PartSources {
  /** The events that rebuild the outbox's state from the store (`storedOutboxEvents`). */
  readStored: () => Promise<DomainEvent[]>;
  /** Resolves once every commit made before the call is published here (the other processes' too). */
  caughtUp: () => Promise<void>;
  log: (message: string) => void;
}

/** The delivery of the queues one lease covers (all, or a group), while this process holds the lease. */
class LeasedPart {
  private current: Delivery | undefined;
  /** The commits published while a turn's start reads the store, given to it after that read. */
  private published: (readonly DomainEvent[])[] | undefined;
  /** Turns start and end one after another. */
  private turns: Promise<void> = Promise.resolve();
  private holding = false;

  constructor(
    private readonly create: () => Delivery,
    /** Undefined when this process is alone on its store. */
    private readonly lease: Lease | undefined,
    private readonly sources: PartSources,
    /** How the log names what it delivers. */
    private readonly what: string,
  ) {
    if (!lease) this.current = create();
  }

  onCommitted(events: readonly DomainEvent[]): void {
    if (this.published) this.published.push(events);
    else this.current?.onCommitted(events);
  }

  start(): void {
    if (!this.lease) {
      this.current!.start();
      return;
    }
    this.lease.start({
      gained: () => {
        this.holding = true;
        this.turn(() => this.take());
      },
      lost: () => {
        this.holding = false;
        this.turn(() => this.leave());
      },
    });
  }

  async stop(): Promise<void> {
    await this.lease?.stop();
    await this.turns;
    await this.leave();
  }

  get delivery(): Delivery | undefined {
    return this.current;
  }

  private turn(step: () => Promise<void>): void {
    this.turns = this.turns.then(step).catch((err: Error) => this.sources.log(`notification delivery: ${err.message}`));
  }

  private async take(): Promise<void> {
    const { readStored, caughtUp, log } = this.sources;
    while (this.holding && !this.current) {
      this.published = [];
      try {
        const delivery = this.create();
        const stored = await readStored();
        // The commits that queued them are known here before they go (the objects, subscriptions and grants they need).
        await caughtUp();
        delivery.onCommitted(stored);
        if (!this.holding) return;
        this.current = delivery;
        // Started before the commits published meanwhile join: an entry among them numbered below one
        // read (its commit was under way during the read) is then taken as late, not as one passed.
        delivery.start();
        for (const events of this.published) delivery.onCommitted(events);
        log(`notification delivery: this process delivers ${this.what}`);
      } catch (err) {
        log(`notification delivery: reading the outbox failed, trying again: ${(err as Error).message}`);
        await new Promise((resolve) => setTimeout(resolve, TAKE_RETRY_MS));
      } finally {
        this.published = undefined;
      }
    }
  }

  private async leave(): Promise<void> {
    const delivery = this.current;
    this.current = undefined;
    await delivery?.stop();
  }
}

/**
 * Delivery of the outbox by the processes on one store: alone, a process delivers it all from its start; with others
 * on one engine, each group of queues is delivered by the process holding that group's lease, which builds the
 * group's queues from the store when it gains the lease and stops at once when it loses it (docs/sparql-engine.md,
 * "Several processes"; ONE Record API, "Events", Delivery model).
 */
export class LeasedDelivery {
  private readonly parts: LeasedPart[];

  constructor(
    /** A delivery of every queue, or of one group's. */
    create: (group?: DeliveryGroup) => Delivery,
    /** Undefined when this process is alone on its store; else one lease, or one per group of queues. */
    leases: readonly Lease[] | undefined,
    sources: PartSources,
  ) {
    if (!leases || leases.length === 1)
      this.parts = [new LeasedPart(() => create(), leases?.[0], sources, 'the outbox')];
    else
      this.parts = leases.map(
        (lease, index) =>
          new LeasedPart(() => create({ index, count: leases.length }), lease, sources, `queue group ${index}`),
      );
  }

  /** Consumer of the after-commit stream (the commits of every process). */
  onCommitted(events: readonly DomainEvent[]): void {
    for (const part of this.parts) part.onCommitted(events);
  }

  /** Starts sending: at once alone, else whenever this process holds a lease. */
  start(): void {
    for (const part of this.parts) part.start();
  }

  /** Stops sending, and records where every queue stands. */
  async stop(): Promise<void> {
    await Promise.all(this.parts.map((part) => part.stop()));
  }

  /** Whether this process delivers notifications now (all of them, or those of a group at least). */
  get delivering(): boolean {
    return this.parts.some((part) => part.delivery !== undefined);
  }

  /** With groups of queues: those this process delivers now. */
  get groups(): number[] | undefined {
    if (this.parts.length === 1) return undefined;
    return this.parts.flatMap((part, index) => (part.delivery ? [index] : []));
  }

  depth(): OutboxDepth {
    const depth: OutboxDepth = { pending: 0, queues: 0, deadLetters: 0 };
    for (const part of this.parts) {
      const of = part.delivery?.depth();
      if (!of) continue;
      depth.pending += of.pending;
      depth.queues += of.queues;
      // Every group's delivery counts the dead letters in the store: all of them.
      depth.deadLetters = Math.max(depth.deadLetters, of.deadLetters);
    }
    return depth;
  }

  queueViews(): QueueView[] {
    return this.parts.flatMap((part) => part.delivery?.queueViews() ?? []);
  }
}
