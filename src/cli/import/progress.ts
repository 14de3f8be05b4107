const REDRAW_MS = 100;
const BAR_WIDTH = 30;

function duration(seconds: number): string {
  if (!Number.isFinite(seconds)) return '?';
  const s = Math.round(seconds);
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

/** A one-line progress bar (count, rate, ETA) redrawn on a terminal; nothing at all elsewhere. */
export class Progress {
  private done = 0;
  private drawnAt = 0;
  private readonly started = Date.now();

  constructor(
    private readonly total: number,
    private readonly terminal: NodeJS.WriteStream | undefined,
  ) {}

  step(): void {
    this.done++;
    const now = Date.now();
    if (this.terminal && (now - this.drawnAt >= REDRAW_MS || this.done === this.total)) {
      this.drawnAt = now;
      this.terminal.write(`\r${this.line(now)}\x1b[K`);
    }
  }

  /** Removes the bar, so that the summary starts on a clean line. */
  finish(): void {
    this.terminal?.write('\r\x1b[K');
  }

  get elapsedSeconds(): number {
    return (Date.now() - this.started) / 1000;
  }

  private line(now: number): string {
    const fraction = this.total === 0 ? 1 : this.done / this.total;
    const filled = Math.round(fraction * BAR_WIDTH);
    const rate = this.done / Math.max((now - this.started) / 1000, 0.001);
    const eta = (this.total - this.done) / rate;
    const bar = `[${'='.repeat(filled)}${' '.repeat(BAR_WIDTH - filled)}]`;
    const percent = Math.floor(fraction * 100);
    return `${bar} ${this.done}/${this.total} ${percent}%  ${rate.toFixed(1)}/s  ETA ${duration(eta)}`;
  }
}
