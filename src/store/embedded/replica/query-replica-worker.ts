import { readlinkSync } from 'node:fs';
import { constants, getPriority, setPriority } from 'node:os';
import { parentPort } from 'node:worker_threads';
import type { QueryJob, QueryReply, WorkerMessage, WorkerRequest } from './messages.js';
import { unpackCommits } from './replica-commits.js';
import { ReplicaFullError, ReplicaStore } from './replica-store.js';

/**
 * The thread of QueryReplica: one replica store (see ReplicaStore), fed in commit order, answering
 * one query at a time, in the order they all arrive.
 */
const port = parentPort!;

/**
 * The thread's CPU priority (Linux): the server's while it applies writes, so the replica keeps up however busy the
 * CPU is; the lowest while it runs a query, so analytics take only what the API leaves. Raising it back needs
 * CAP_SYS_NICE; without, it stays lowest and the owner is told (docs/sparql-replica.md, "Freshness").
 */
const threadId = (() => {
  try {
    return Number(readlinkSync('/proc/thread-self').split('/').pop());
  } catch {
    return undefined; // not Linux: the time budget still bounds a query
  }
})();
type Priority = 'apply' | 'query';
const NICE: Readonly<Record<Priority, number>> = {
  apply: threadId === undefined ? 0 : getPriority(threadId),
  query: constants.priority.PRIORITY_LOW,
};
let priority: Priority = 'apply';
/**
 * A successor making its copy while the replica before it still serves: nobody waits on it, so it
 * takes only the CPU that the API and the serving replica leave (the lowest priority) until its
 * copy is whole; then it catches up with the writes at the server's, as the replica serving does.
 */
let standby = false;
/** For a successor, the growth point the replica it takes over from was near. */
let handedOverFor = 0;
let mayRaise = threadId !== undefined;

function prioritise(wanted: Priority): void {
  if (wanted === priority || threadId === undefined) return;
  if (wanted === 'apply' && !mayRaise) return;
  try {
    setPriority(threadId, NICE[wanted]);
    priority = wanted;
  } catch (err) {
    if (wanted !== 'apply') return;
    mayRaise = false;
    port.postMessage({
      kind: 'priority',
      message:
        `its thread may not raise its CPU priority again after a query (${(err as Error).message}; it needs ` +
        `CAP_SYS_NICE or RLIMIT_NICE)`,
    } satisfies WorkerMessage);
  }
}

// Made by the first message, `start`.
let replica!: ReplicaStore;
/**
 * The last commit applied; whether the copy of the store is complete (until then commits come one by one, between its
 * parts, and are not acknowledged).
 */
let position = 0;
let loaded = false;
/** Set when the replica's memory could take no more: it is fed nothing from then on (QueryReplica refuses queries). */
let full = false;
const utf8 = new TextDecoder();

/**
 * Applies a part of the feed, unless the replica is full; the first part that does not fit makes it full, and says so.
 */
function feed(apply: () => void): boolean {
  if (full) return false;
  try {
    apply();
    return true;
  } catch (err) {
    if (!(err instanceof ReplicaFullError)) throw err;
    full = true;
    // Deleted quads keep their memory (Oxigraph): when they are a good part of it, a new copy would fit again.
    port.postMessage({
      kind: 'full',
      message: err.message,
      reclaimable: replica.deletedQuads * 4 >= replica.size,
    } satisfies WorkerMessage);
    return false;
  }
}

/** The copy is complete: the copy's tables are grown, and the replica serves from now on. */
function onLoaded(at: number): void {
  replica.copied();
  const grown = feed(() => {
    const tables = replica.growPastNextPoint(handedOverFor);
    if (tables) port.postMessage({ kind: 'tables', ...tables } satisfies WorkerMessage);
  });
  if (!grown) return;
  standby = false;
  loaded = true;
  position = at;
  port.postMessage({ kind: 'applied', position } satisfies WorkerMessage);
  port.postMessage({ kind: 'loaded' } satisfies WorkerMessage);
}

/** A batch of commits applied; a serving replica near a growth point of its tables says so. */
function onCommits({ commits, position: at }: Extract<WorkerRequest, { kind: 'commits' }>): void {
  const records = unpackCommits(commits).map((c) => ({ insert: utf8.decode(c.insert), delete: utf8.decode(c.delete) }));
  if (!feed(() => replica.applyRecords(records))) return;
  position = at;
  if (!loaded) return;
  port.postMessage({ kind: 'applied', position } satisfies WorkerMessage);
  if (standby) return;
  const point = replica.growthAhead();
  if (point !== undefined)
    port.postMessage({ kind: 'growing', loadedQuads: replica.loadedQuads, point } satisfies WorkerMessage);
}

function onQuery(job: QueryJob): void {
  port.postMessage({ kind: 'started' } satisfies WorkerMessage);
  let reply: QueryReply;
  try {
    reply = { ...replica.run(job), position };
  } catch (err) {
    reply = { error: (err as Error).message };
  }
  port.postMessage(reply satisfies WorkerMessage);
}

port.on('message', (message: WorkerRequest) => {
  if (message.kind === 'start') [standby, handedOverFor] = [message.standby, message.handedOverFor ?? 0];
  prioritise(message.kind === 'query' || standby ? 'query' : 'apply');
  switch (message.kind) {
    case 'start':
      replica = new ReplicaStore(
        message.historyMaxQuads,
        message.queryReserveBytes,
        message.memoryLimitBytes,
        message.longGrowthFrom,
      );
      return;
    case 'meta':
      feed(() => replica.copyMeta(message.nquads));
      return;
    case 'hot':
      feed(() => replica.copyHot(message.nquads));
      return;
    case 'history':
      feed(() => replica.copyHistory(message.entries));
      return;
    case 'loaded':
      onLoaded(message.position);
      return;
    case 'commits':
      onCommits(message);
      return;
    case 'query':
      onQuery(message);
      return;
  }
});
