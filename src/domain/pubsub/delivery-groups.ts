/*
 * With several server processes on one engine, the delivery queues are hashed into a fixed number of groups, each
 * delivered by one process at a time under a lease of its own (docs/sparql-engine.md, "Several processes"). A queue
 * stays in its group whatever the processes do, so its notifications go in order from one process.
 */

import type { SettleWriter } from './settle-batches.js';

/** Group `index` of `count`, as its delivery sees it. */
export interface DeliveryGroup {
  index: number;
  count: number;
  /** Where its settle commits go (SettleBatches: those of every group of the process, together). */
  settleWriter?: SettleWriter;
}

/** Which of `count` groups queue `queue` is in: FNV-1a of its key, the same in every process. */
export function queueGroup(queue: string, count: number): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < queue.length; i++) {
    hash ^= queue.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % count;
}

/** A group's name in the store; the groups of another count are other groups (their queues hash elsewhere). */
export const groupName = ({ index, count }: DeliveryGroup) => `${index}/${count}`;
