import { readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { createLogger, type Logger } from '../../src/observability/logger.js';

/**
 * Every server a test run starts logs into one file, and every token and client secret the run
 * handles is noted, so that test/logs.test.ts can check at the end of the run that no log line
 * holds one of them.
 */
const LOG_FILE = join(tmpdir(), `onerecord-test-log-${process.pid}.ndjson`);
const destination = pino.destination({ dest: LOG_FILE, sync: true, append: true });
const secrets = new Set<string>();

/** A logger writing into the run's log file. */
export function testLogger(): Logger {
  return createLogger('info', destination);
}

/** Log lines of a server running in another process. */
export function appendToTestLog(line: string): void {
  destination.write(`${line}\n`);
}

/** A token or secret that must never appear in a log line. */
export function noteSecret(value: string): void {
  secrets.add(value);
}

export function notedSecrets(): string[] {
  return [...secrets];
}

export function testLogLines(): string[] {
  return readFileSync(LOG_FILE, 'utf8').split('\n').filter(Boolean);
}

export function removeTestLog(): void {
  rmSync(LOG_FILE, { force: true });
}
