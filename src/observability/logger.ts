import { createRequire } from 'node:module';
import { pino, type DestinationStream, type Logger } from 'pino';
import type { PrettyStream } from 'pino-pretty';
import type { LogLevel } from '../config.js';

export type { Logger };

/**
 * The server's structured logger: JSON lines, or coloured lines on a terminal; `destination` is for tests and
 * tools. Of what a client sends only the method, the path (no query string) and `X-Request-Id` are logged, never
 * a header, body or token (docs/operations.md, "Logs").
 */
export function createLogger(level: LogLevel, destination?: DestinationStream): Logger {
  const options = {
    level,
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label: string) => ({ level: label }) },
  };
  if (destination) return pino(options, destination);
  if (process.stdout.isTTY) {
    // Loaded only for a terminal: servers under an orchestrator never pay for it.
    const pretty = createRequire(import.meta.url)('pino-pretty') as (options: object) => PrettyStream;
    return pino(options, pretty({ colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' }));
  }
  // Synchronous writes (pino's default): no line is lost when the process is killed.
  return pino(options, pino.destination({ dest: 1, sync: true }));
}

/** The narrow `(message) => void` the store takes, writing info lines of one component. */
export function messageLog(logger: Logger, component: string): (message: string) => void {
  const child = logger.child({ component });
  return (message) => child.info(message);
}
