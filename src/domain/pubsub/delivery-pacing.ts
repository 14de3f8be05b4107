/** How many notifications are sent at once, and how fast while API requests are being answered. */
export interface PacingOptions {
  /** Notifications being sent at once, over all queues. */
  maxInFlight: number;
  /** The same while API requests are being answered. */
  inFlightWhileServing: number;
  /** Notifications started per second, at most, while API requests are being answered. */
  sendsPerSecondWhileServing: number;
}

/** While sends are held back for API requests, how often it is looked whether they paused. */
export const PAUSE_POLL_MS = 5;

/**
 * Which queue sends next, and when: never in the commit's tick (a write's answer never waits for delivery), at
 * most `maxInFlight` at once, ready queues in turn; while API requests are served, fewer and at a token-bucket
 * pace, since sends share the requests' thread (docs/delivery.md, "How the outbox works").
 */
export class SendPacer<Q extends { ready: boolean }> {
  /** Queues that may send now, in the order they became ready. */
  private readonly ready: Q[] = [];
  private inFlight = 0;
  private scheduled = false;
  /** Sends that may start while serving, as of `tokensAt`. */
  private servingTokens = 0;
  private tokensAt = 0;
  private resumeTimer?: NodeJS.Timeout;

  constructor(
    private readonly options: PacingOptions,
    /** True while API requests are being answered. */
    private readonly serving: () => boolean,
    /** Starts the next send of `q` when its turn has come; false if it has none to start now. */
    private readonly startNext: (q: Q) => boolean,
  ) {}

  /** `q` has a notification that may go now: it joins the queues taking turns. */
  add(q: Q): void {
    if (q.ready) return;
    q.ready = true;
    this.ready.push(q);
    this.schedule();
  }

  /** A send that `startNext` started has ended. */
  ended(): void {
    this.inFlight -= 1;
    this.schedule();
  }

  /** Queues wait for their turn to send. */
  get waiting(): boolean {
    return this.ready.length > 0;
  }

  stop(): void {
    clearTimeout(this.resumeTimer);
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      const serving = this.serving();
      let limit = this.options.maxInFlight;
      if (serving) {
        const now = performance.now();
        const burst = Math.min(this.options.inFlightWhileServing, this.options.maxInFlight);
        this.servingTokens = Math.min(
          burst,
          this.servingTokens + ((now - this.tokensAt) * this.options.sendsPerSecondWhileServing) / 1000,
        );
        this.tokensAt = now;
        limit = Math.min(burst, this.inFlight + Math.floor(this.servingTokens));
      }
      while (this.inFlight < limit && this.ready.length > 0) {
        const q = this.ready.shift()!;
        q.ready = false;
        if (!this.startNext(q)) continue;
        this.inFlight += 1;
        if (serving) this.servingTokens -= 1;
      }
      // Held back while serving: look again once a send may start (or the requests paused).
      if (serving && this.ready.length > 0 && this.resumeTimer === undefined) {
        const wait = Math.max(
          PAUSE_POLL_MS,
          ((1 - this.servingTokens) * 1000) / this.options.sendsPerSecondWhileServing,
        );
        this.resumeTimer = setTimeout(() => {
          this.resumeTimer = undefined;
          this.schedule();
        }, wait);
      }
    });
  }
}
