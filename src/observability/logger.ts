import { createRequire } from 'node:module';
import { pino, type DestinationStream, type Logger } from 'pino';
import type { PrettyStream } from 'pino-pretty';
import type { LogLevel } from '../config.js';

export type { Logger };

/**
 * The server's structured logger: one JSON object per line (level as a word, ISO time), or
 * coloured, human-readable lines when stdout is a terminal. `destination` is for tests and tools
 * that collect the lines themselves.
 *
 * Nothing a client sends is logged but the method, the path (never the query string) and
 * `X-Request-Id`: no header, no body, no token.
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
