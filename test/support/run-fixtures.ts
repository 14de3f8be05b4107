// Loaded by mocha (`require` in .mocharc.json) in the main process before any test file, and again
// in each --parallel worker process, which inherits the main process's environment.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

if (process.env.ONERECORD_TEST_LOG_DIR === undefined)
  process.env.ONERECORD_TEST_LOG_DIR = mkdtempSync(join(tmpdir(), 'onerecord-test-logs-'));

/**
 * Once every test file of the run is done, in whichever process: no log line of the whole run holds
 * a token or a client secret. A failure counts as one (mocha reports "global teardown failed") and
 * leaves the directory in place to look at.
 */
export async function mochaGlobalTeardown(): Promise<void> {
  // Imported here, not above: the module reads ONERECORD_TEST_LOG_DIR when it loads.
  const { expectNoSecretLogged, runLogs } = await import('./run-log-check.js');
  const dir = process.env.ONERECORD_TEST_LOG_DIR!;
  const { lines, secrets } = runLogs(dir);
  try {
    expectNoSecretLogged(lines, secrets);
  } catch (err) {
    (err as Error).message =
      `no log line of the whole test run holds a token or a client secret (logs in ${dir}): ${(err as Error).message}`;
    throw err;
  }
  rmSync(dir, { recursive: true, force: true });
}
