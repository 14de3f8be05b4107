import { runCrashRounds, startNotificationRecorder } from '../support/crash-driver.js';
import { expectCrashRun } from '../support/crash-checks.js';
import { freePort } from '../support/server.js';
import { tempDir } from '../support/store-data.js';

// `npm run test:long`: the SIGKILL test at length. test/crash.test.ts runs a short one in `npm test`.
describe('crash safety: a server SIGKILLed at random moments while it writes', function () {
  // Each round starts a server process: 1-5 s on the shared 2-core machine when it is busy (more
  // while other suites or benchmarks run), so 50 rounds can need far more than the ~115 s a quiet
  // machine takes.
  this.timeout(900_000);

  it('after 50 kill/restart rounds (started from the memory image of the last snapshot or of a clean stop, the journal after it replayed) every acknowledged object, change (revision, the revision it replaced, ChangeRequest), event, delegation, revocation and received notification is there exactly (a received one once, also when sent again), and every notification they caused reached the subscriber in order', async () => {
    const { dir, remove } = await tempDir();
    const subscriber = await startNotificationRecorder();
    try {
      const report = await runCrashRounds({
        rounds: 50,
        dataDir: dir,
        port: await freePort(),
        maxWriteMs: 250,
        concurrency: 8,
        // Small, so that snapshots start often and random kills hit them.
        snapshotAfterBytes: 16 * 1024,
        snapshotRoundEvery: 10,
        imageRoundEvery: 7,
        killWhileStartingShare: 0.1,
        sampleOlder: 5,
        subscriber,
      });
      expectCrashRun(report, {
        rounds: 50,
        acknowledged: 100,
        perKind: 20,
        perRareKind: 5,
        imageReads: 5,
        snapshotImageReads: 3,
      });
    } finally {
      await subscriber.listener.close();
      await remove();
    }
  });
});
