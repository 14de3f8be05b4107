import type { GraphStore } from '../../store/graph-store.js';
import { deadLetterQuads, readParkedNotifications } from '../../store/schema/outbox.js';

export interface DeadLetterView {
  notification: string;
  queue: string;
  subscription: string;
  callback: string;
  eventType: string;
  object?: string;
  queuedAt: string;
  deadLetteredAt: string;
  reason: string;
}

/**
 * The notifications given up on, as the store holds them (each in a graph of its own): listed, and
 * put back in their queues by a commit, which the process delivering takes from the after-commit
 * stream (any process may list or replay them).
 */
export class DeadLetters {
  private replaying: Promise<unknown> = Promise.resolve();

  constructor(private readonly store: GraphStore) {}

  /** The dead letters, oldest first. */
  async views(): Promise<DeadLetterView[]> {
    return (await readParkedNotifications(this.store, { dead: true })).map(({ notification: n, dead }) => ({
      notification: n.iri,
      queue: n.queue,
      subscription: n.subscription,
      callback: n.callback,
      eventType: n.eventType,
      ...(n.object === undefined ? {} : { object: n.object }),
      queuedAt: n.queuedAt.toISOString(),
      deadLetteredAt: dead!.at.toISOString(),
      reason: dead!.reason,
    }));
  }

  /** Puts dead letters (all, or those named) back in their queues, in one commit; how many. */
  replay(notifications?: readonly string[]): Promise<number> {
    // One at a time: each reads the dead letters as the one before left them.
    const replayed = this.replaying.then(() => this.replayNow(notifications));
    this.replaying = replayed.catch(() => undefined);
    return replayed;
  }

  private async replayNow(notifications?: readonly string[]): Promise<number> {
    const chosen = (await readParkedNotifications(this.store, { dead: true })).filter(
      (d) => notifications === undefined || notifications.includes(d.notification.iri),
    );
    if (chosen.length === 0) return 0;
    const tx = this.store.begin({ delete: chosen.flatMap((d) => deadLetterQuads(d.notification, d.dead!)) });
    for (const d of chosen) tx.events.push({ kind: 'notification-replayed', notification: d.notification });
    await this.store.commit(tx);
    return chosen.length;
  }
}
