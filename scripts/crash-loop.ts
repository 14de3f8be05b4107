/**
 * The crash test for longer runs than CI affords:
 *   node dist/scripts/crash-loop.js [--rounds 500] [--concurrency 8] [--max-write-ms 500] [--snapshot-after-bytes 262144] [--data-dir DIR]
 * Each round starts a server process, checks what the rounds before wrote, writes objects as fast
 * as possible and SIGKILLs the server at a random moment (every 25th round: once it has written a
 * snapshot). Exits 1 on the first lost or altered write.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { runCrashRounds, SNAPSHOT_WRITTEN } from '../test/support/crash-driver.js';
import { freePort } from '../test/support/server.js';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '500' },
    concurrency: { type: 'string', default: '8' },
    'max-write-ms': { type: 'string', default: '500' },
    'snapshot-after-bytes': { type: 'string', default: String(256 * 1024) },
    'data-dir': { type: 'string' },
  },
});

const dataDir = values['data-dir'] ?? (await mkdtemp(join(tmpdir(), 'onerecord-crash-')));
const started = Date.now();
const report = await runCrashRounds({
  rounds: Number(values.rounds),
  dataDir,
  port: await freePort(),
  maxWriteMs: Number(values['max-write-ms']),
  concurrency: Number(values.concurrency),
  snapshotAfterBytes: Number(values['snapshot-after-bytes']),
  killWhileStartingShare: 0.1,
  snapshotRoundEvery: 25,
  imageRoundEvery: 10,
  sampleOlder: 20,
  progress: (line) => console.log(line),
});
const snapshots = report.storeLog.filter((line) => SNAPSHOT_WRITTEN.test(line)).length;
const dropped = report.storeLog.filter((line) => line.includes('dropped')).length;
console.log(
  `${report.rounds} rounds in ${((Date.now() - started) / 1000).toFixed(1)} s: ${report.acknowledged} acknowledged writes ` +
    `(${Object.entries(report.acknowledgedByKind)
      .map(([kind, n]) => `${n} ${kind}`)
      .join(', ')}), ` +
    `${report.unanswered} unanswered (${report.unansweredPresent} of them durable anyway), ${report.killsWhileStarting} kills while starting, ` +
    `${snapshots} snapshots, ${dropped} torn tails dropped`,
);
for (const failure of report.failures) console.error(`FAILED: ${failure}`);
if (!values['data-dir']) await rm(dataDir, { recursive: true, force: true });
process.exitCode = report.failures.length > 0 ? 1 : 0;
