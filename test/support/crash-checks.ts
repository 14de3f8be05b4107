import { expect } from 'chai';
import { IMAGE_READ, SNAPSHOT_IMAGE_READ, SNAPSHOT_WRITTEN, type CrashRunReport } from './crash-driver.js';

/** The least a run of SIGKILL rounds must have exercised for its verdict to mean something. */
export interface CrashRunMinimums {
  rounds: number;
  /** Acknowledged writes in all, more than this. */
  acknowledged: number;
  /** Acknowledged creates, changes and events, each more than this. */
  perKind: number;
  /** Acknowledged delegations, revocations and received notifications, each more than this. */
  perRareKind: number;
  /** Starts from a memory image, at least. */
  imageReads: number;
  /** Starts from the image a snapshot wrote, at least. */
  snapshotImageReads: number;
}

/**
 * Nothing acknowledged was lost or altered (`report.failures`, every notification delivered in
 * order), and the run did what it is there for: kills while writes were in flight, snapshots,
 * starts from memory images.
 */
export function expectCrashRun(report: CrashRunReport, minimums: CrashRunMinimums): void {
  expect(report.failures).to.deep.equal([]);
  expect(report.rounds).to.equal(minimums.rounds);
  expect(report.acknowledged).to.be.greaterThan(minimums.acknowledged);
  for (const kind of ['create object', 'change object', 'post event'])
    expect(report.acknowledgedByKind[kind] ?? 0, kind).to.be.greaterThan(minimums.perKind);
  for (const kind of ['delegate access', 'revoke delegation', 'receive notification'])
    expect(report.acknowledgedByKind[kind] ?? 0, kind).to.be.greaterThan(minimums.perRareKind);
  expect(report.unanswered).to.be.greaterThan(0, 'no kill landed while a write was in flight');
  expect(report.storeLog.some((line) => SNAPSHOT_WRITTEN.test(line))).to.equal(
    true,
    'no snapshot was written during the run',
  );
  // Rounds that started from a memory image (and were then killed) plus the final clean restarts.
  const imageLines = `its log lines:\n${report.storeLog.filter((line) => /memory image/.test(line)).join('\n')}`;
  expect(report.storeLog.filter((line) => IMAGE_READ.test(line)).length).to.be.at.least(
    minimums.imageReads,
    `too few starts from a memory image; ${imageLines}`,
  );
  // Starts after a kill that followed a snapshot (every snapshotRoundEvery-th round waits for one) read the image it wrote.
  expect(report.storeLog.filter((line) => SNAPSHOT_IMAGE_READ.test(line)).length).to.be.at.least(
    minimums.snapshotImageReads,
    `too few starts from the image of a snapshot; ${imageLines}`,
  );
  // Each acknowledged create, change and event queued one notification in its own commit.
  const notifying = ['create object', 'change object', 'post event'].reduce(
    (sum, kind) => sum + (report.acknowledgedByKind[kind] ?? 0),
    0,
  );
  expect(report.notificationsExpected).to.equal(notifying);
  expect(report.notificationsReceived).to.be.at.least(notifying);
}
