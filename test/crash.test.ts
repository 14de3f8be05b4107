import { expect } from 'chai';
import { IMAGE_READ, runCrashRounds, SNAPSHOT_IMAGE_READ, SNAPSHOT_WRITTEN, startNotificationRecorder } from './support/crash-driver.js';
import { freePort } from './support/server.js';
import { tempDir } from './support/store-data.js';

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
      expect(report.failures).to.deep.equal([]);
      expect(report.rounds).to.equal(50);
      expect(report.acknowledged).to.be.greaterThan(100);
      for (const kind of ['create object', 'change object', 'post event']) expect(report.acknowledgedByKind[kind] ?? 0, kind).to.be.greaterThan(20);
      for (const kind of ['delegate access', 'revoke delegation', 'receive notification']) expect(report.acknowledgedByKind[kind] ?? 0, kind).to.be.greaterThan(5);
      expect(report.unanswered).to.be.greaterThan(0, 'no kill landed while a write was in flight');
      expect(report.storeLog.some((line) => SNAPSHOT_WRITTEN.test(line))).to.equal(true, 'no snapshot was written during the run');
      // Rounds that started from a memory image (and were then killed) plus the final clean restarts.
      const imageLines = `its log lines:\n${report.storeLog.filter((line) => /memory image/.test(line)).join('\n')}`;
      expect(report.storeLog.filter((line) => IMAGE_READ.test(line)).length).to.be.at.least(5, `too few starts from a memory image; ${imageLines}`);
      // Starts after a kill that followed a snapshot (every 10th round waits for one) read the image it wrote.
      expect(report.storeLog.filter((line) => SNAPSHOT_IMAGE_READ.test(line)).length).to.be.at.least(3, `too few starts from the image of a snapshot; ${imageLines}`);
      // Each acknowledged create, change and event queued one notification in its own commit.
      const notifying = ['create object', 'change object', 'post event'].reduce((sum, kind) => sum + (report.acknowledgedByKind[kind] ?? 0), 0);
      expect(report.notificationsExpected).to.equal(notifying);
      expect(report.notificationsReceived).to.be.at.least(notifying);
    } finally {
      await subscriber.listener.close();
      await remove();
    }
  });
});
