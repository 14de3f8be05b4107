import type { Lease } from '../../store/lease.js';
import type { DomainEvent } from '../../store/transaction.js';
import type { Delivery, OutboxDepth, QueueView } from './delivery.js';

/** After a failed read of the outbox at the start of a turn, the next try (while the lease is held). */
const TAKE_RETRY_MS = 1000;

/**
 * Delivery of the outbox by one server process at a time: alone, a process delivers from its start; with others on
 * one engine, the delivery lease holder delivers every process's notifications and stops at once when it loses
 * the lease (docs/sparql-engine.md, "Several processes"; ONE Record API, "Events", Delivery model).
 */
export class LeasedDelivery {
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
    /** The events that rebuild the outbox's state from the store (`storedOutboxEvents`). */
    private readonly readStored: () => Promise<DomainEvent[]>,
    /** Resolves once every commit made before the call is published here (the other processes' too). */
    private readonly caughtUp: () => Promise<void>,
    private readonly log: (message: string) => void,
  ) {
    if (!lease) this.current = create();
  }

  /** Consumer of the after-commit stream (the commits of every process). */
  onCommitted(events: readonly DomainEvent[]): void {
    if (this.published) this.published.push(events);
    else this.current?.onCommitted(events);
  }

  /** Starts sending: at once alone, else whenever this process holds the lease. */
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

  /** Stops sending, and records where every queue stands. */
  async stop(): Promise<void> {
    await this.lease?.stop();
    await this.turns;
    await this.leave();
  }

  /** Whether this process delivers the notifications now. */
  get delivering(): boolean {
    return this.current !== undefined;
  }

  depth(): OutboxDepth {
    return this.current?.depth() ?? { pending: 0, queues: 0, deadLetters: 0 };
  }

  queueViews(): QueueView[] {
    return this.current?.queueViews() ?? [];
  }

  private turn(step: () => Promise<void>): void {
    this.turns = this.turns.then(step).catch((err: Error) => this.log(`notification delivery: ${err.message}`));
  }

  private async take(): Promise<void> {
    while (this.holding && !this.current) {
      this.published = [];
      try {
        const delivery = this.create();
        const stored = await this.readStored();
        // The commits that queued them are known here before they go (the objects, subscriptions and grants they need).
        await this.caughtUp();
        delivery.onCommitted(stored);
        if (!this.holding) return;
        this.current = delivery;
        // Started before the commits published meanwhile join: an entry among them numbered below one
        // read (its commit was under way during the read) is then taken as late, not as one passed.
        delivery.start();
        for (const events of this.published) delivery.onCommitted(events);
        this.log('notification delivery: this process delivers the outbox');
      } catch (err) {
        this.log(`notification delivery: reading the outbox failed, trying again: ${(err as Error).message}`);
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
