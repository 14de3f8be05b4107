import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { appendToTestLog, noteSecret } from './log-sink.js';
import type { ConfigOverrides } from '../../src/config.js';

const CRASH_WRITER = fileURLToPath(new URL('./crash-writer.js', import.meta.url));

export interface ServerProcessOptions {
  dataDir: string;
  port: number;
  snapshotAfterBytes?: number;
  /** RLIMIT_FSIZE for the process, in KiB: writes past it fail with EFBIG, a real write error. */
  fileSizeLimitKiB?: number;
  /** More configuration (trusted issuers, outbound, delivery, ...). */
  config?: ConfigOverrides;
}

export interface Listening {
  url: string;
  token: string;
}

/** A JSON log line as text: its message, then the message of its error if any. */
function readableLine(line: string): string {
  try {
    const entry = JSON.parse(line) as { msg?: string; err?: { message?: string } };
    return [entry.msg, entry.err?.message].filter(Boolean).join(': ');
  } catch {
    return line;
  }
}

/** A server started by crash-writer.ts in its own process. */
export class ServerProcess {
  /** The server's log lines so far. */
  readonly log: string[] = [];
  /** Resolves once the server listens; rejects if the process ends first. */
  readonly ready: Promise<Listening>;
  readonly exited: Promise<void>;
  private readonly child: ChildProcess;

  constructor(options: ServerProcessOptions) {
    const args = [
      CRASH_WRITER,
      options.dataDir,
      String(options.port),
      String(options.snapshotAfterBytes ?? 64 * 1024 * 1024),
      ...(options.config ? [JSON.stringify(options.config)] : []),
    ];
    this.child =
      options.fileSizeLimitKiB === undefined
        ? spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] })
        : spawn('bash', ['-c', `ulimit -f ${options.fileSizeLimitKiB} && exec "$0" "$@"`, process.execPath, ...args], {
            stdio: ['ignore', 'pipe', 'pipe'],
          });
    createInterface({ input: this.child.stderr! }).on('line', (line) => {
      // Native code writes to the same stderr, without a line end (LMDB on a full disk: "Write
      // error: …"): only our JSON log lines go to the run's log, which test/logs.test.ts parses.
      const logLine = line.indexOf('{"level"');
      if (logLine >= 0) appendToTestLog(line.slice(logLine));
      this.log.push(readableLine(line));
    });
    // 'close', not 'exit': it comes once stderr has been read to its end, so no log line is missed.
    this.exited = once(this.child, 'close').then(() => {});
    const firstLine = once(createInterface({ input: this.child.stdout! }), 'line').then(([line]) => {
      const listening = JSON.parse(line as string) as Listening;
      noteSecret(listening.token);
      return listening;
    });
    this.ready = Promise.race([
      firstLine,
      this.exited.then(() => {
        throw new Error(`server process ended before listening:\n${this.log.join('\n')}`);
      }),
    ]);
    this.ready.catch(() => {}); // a process killed while starting is expected in crash rounds
  }

  /** How the process ended (both null while it runs). */
  get exit(): { code: number | null; signal: NodeJS.Signals | null } {
    return { code: this.child.exitCode, signal: this.child.signalCode };
  }

  /** Sends `signal` and waits for the process to end. */
  async stop(signal: NodeJS.Signals): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
    await this.exited;
  }

  /** Sends `signal` (SIGSTOP, SIGCONT: a process paused and continued), not waiting for anything. */
  signal(signal: NodeJS.Signals): void {
    this.child.kill(signal);
  }

  /** fetch against the server with the data holder's token. */
  async request(path: string, init: RequestInit = {}): Promise<Response> {
    const { url, token } = await this.ready;
    const headers = new Headers(init.headers);
    headers.set('Authorization', `Bearer ${token}`);
    return fetch(path.startsWith('http') ? path : `${url}${path}`, { ...init, headers });
  }
}
