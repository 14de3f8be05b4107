import { appendFileSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { createLogger, type Logger } from '../../src/observability/logger.js';
import { RUN_LOG_DIR } from './run-log-check.js';

/**
 * Every server a test process starts logs into one file, and every token and client secret the
 * process handles is noted, so that the end of the run can check that no log line holds one of them.
 * In a run of the whole suite (`.mocharc.json`, files spread over worker processes by --parallel)
 * every process writes both into the run's directory (RUN_LOG_DIR), whose files
 * test/support/run-fixtures.ts checks once every file is done; a file run alone keeps its own log
 * file, which test/logs.test.ts checks.
 */
const LOG_FILE = RUN_LOG_DIR
  ? join(RUN_LOG_DIR, `log-${process.pid}.ndjson`)
  : join(tmpdir(), `onerecord-test-log-${process.pid}.ndjson`);
const SECRETS_FILE = RUN_LOG_DIR && join(RUN_LOG_DIR, `secrets-${process.pid}.txt`);
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
  if (secrets.has(value)) return;
  secrets.add(value);
  if (SECRETS_FILE) appendFileSync(SECRETS_FILE, `${value}\n`);
}

export function notedSecrets(): string[] {
  return [...secrets];
}

/** The log lines of this process. */
export function testLogLines(): string[] {
  return readFileSync(LOG_FILE, 'utf8').split('\n').filter(Boolean);
}

export function removeTestLog(): void {
  rmSync(LOG_FILE, { force: true });
}
