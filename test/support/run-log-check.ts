import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';

/**
 * The directory every process of a whole-suite run writes its logs and noted secrets into, set by
 * test/support/run-fixtures.ts (mocha's `require`) before any test file loads, and inherited by
 * --parallel's worker processes; unset when a file runs alone (`--no-config`).
 */
export const RUN_LOG_DIR = process.env.ONERECORD_TEST_LOG_DIR;

/** No log line holds a noted token or client secret (and both were there to check). */
export function expectNoSecretLogged(lines: readonly string[], secrets: readonly string[]): void {
  expect(lines.filter((line) => line.includes('"msg":"request"')).length, 'request lines logged').to.be.greaterThan(0);
  expect(secrets.length, 'tokens noted').to.be.greaterThan(0);
  const leaks = secrets.filter((secret) => lines.some((line) => line.includes(secret)));
  expect(leaks, 'tokens or secrets found in the logs').to.deep.equal([]);
}

/** The log lines and noted secrets of every process of the run that wrote into `dir`. */
export function runLogs(dir: string): { lines: string[]; secrets: string[] } {
  const lines: string[] = [];
  const secrets: string[] = [];
  for (const name of readdirSync(dir)) {
    const into = name.startsWith('log-') ? lines : name.startsWith('secrets-') ? secrets : undefined;
    into?.push(...readFileSync(join(dir, name), 'utf8').split('\n').filter(Boolean));
  }
  return { lines, secrets };
}
