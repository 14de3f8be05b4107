import { runCrashRounds, startNotificationRecorder } from './support/crash-driver.js';
import { expectCrashRun } from './support/crash-checks.js';
import { freePort } from './support/server.js';
import { tempDir } from './support/store-data.js';

// The same test as test/long/crash.test.ts (`npm run test:long`, 50 rounds, ~2 minutes), in fewer
// rounds: a random kill (rounds 1, 3), one after a snapshot (2, 4: two, as a round killed while it
// starts writes none), starts from the memory image of a clean stop (2, 4) and of a snapshot (3 and
// the final checks) still come up; a kill while starting, by chance.
describe('crash safety: a server SIGKILLed at random moments while it writes (short run)', function () {
  this.timeout(300_000);

  it('after 4 kill/restart rounds (started from the memory image of the last snapshot or of a clean stop, the journal after it replayed) every acknowledged object, change (revision, the revision it replaced, ChangeRequest), event, delegation, revocation and received notification is there exactly (a received one once, also when sent again), and every notification they caused reached the subscriber in order', async () => {
    const { dir, remove } = await tempDir();
    const subscriber = await startNotificationRecorder();
    try {
      const report = await runCrashRounds({
        rounds: 4,
        dataDir: dir,
        port: await freePort(),
        // Longer than the long run's rounds: in 4 rounds the rarer writes (a revocation needs a
        // delegation first) still come.
        maxWriteMs: 600,
        concurrency: 8,
        // Small, so that snapshots start often and random kills hit them.
        snapshotAfterBytes: 16 * 1024,
        snapshotRoundEvery: 2,
        imageRoundEvery: 2,
        killWhileStartingShare: 0.1,
        sampleOlder: 5,
        subscriber,
      });
      expectCrashRun(report, {
        rounds: 4,
        acknowledged: 12,
        perKind: 2,
        perRareKind: 0,
        imageReads: 2,
        snapshotImageReads: 1,
      });
    } finally {
      await subscriber.listener.close();
      await remove();
    }
  });
});
