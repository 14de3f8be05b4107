import { readlinkSync } from 'node:fs';
import { constants, setPriority } from 'node:os';
import { parentPort } from 'node:worker_threads';
import type { QueryReply, WorkerMessage, WorkerRequest } from './query-replica.js';
import { ReplicaFullError, ReplicaStore } from './replica-store.js';

/**
 * The thread of QueryReplica: one replica store (see ReplicaStore), fed in commit order, answering
 * one query at a time, in the order they all arrive.
 */
const port = parentPort!;

// Lowest priority (Linux): a heavy query takes only the CPU the request thread leaves.
try {
  setPriority(Number(readlinkSync('/proc/thread-self').split('/').pop()), constants.priority.PRIORITY_LOW);
} catch {
  // not Linux, or not allowed: the time budget still bounds a query
}

// Made by the first message, `start`.
let replica!: ReplicaStore;
/** The last commit applied; whether the copy of the store is complete (until then commits come one by one, between its parts, and are not acknowledged). */
let position = 0;
let loaded = false;
/** Set when the replica's memory could take no more: it is fed nothing from then on (QueryReplica refuses queries). */
let full = false;
const utf8 = new TextDecoder();

/** Applies a part of the feed, unless the replica is full; the first part that does not fit makes it full, and says so. */
function feed(apply: () => void): boolean {
  if (full) return false;
  try {
    apply();
    return true;
  } catch (err) {
    if (!(err instanceof ReplicaFullError)) throw err;
    full = true;
    // Deleted quads keep their memory (Oxigraph): when they are a good part of it, a new copy would fit again.
    port.postMessage({ kind: 'full', message: err.message, reclaimable: replica.deletedQuads * 4 >= replica.size } satisfies WorkerMessage);
    return false;
  }
}

port.on('message', (message: WorkerRequest) => {
  switch (message.kind) {
    case 'start':
      replica = new ReplicaStore(message.historyMaxQuads, message.queryReserveBytes);
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
      replica.copied();
      loaded = true;
      position = message.position;
      port.postMessage({ kind: 'applied', position } satisfies WorkerMessage);
      port.postMessage({ kind: 'loaded' } satisfies WorkerMessage);
      return;
    case 'commits':
      if (!feed(() => replica.applyRecords(message.commits.map((c) => ({ insert: utf8.decode(c.insert), delete: utf8.decode(c.delete) }))))) return;
      position = message.position;
      if (loaded) port.postMessage({ kind: 'applied', position } satisfies WorkerMessage);
      return;
    case 'query': {
      port.postMessage({ kind: 'started' } satisfies WorkerMessage);
      let reply: QueryReply;
      try {
        reply = { ...replica.run(message), position };
      } catch (err) {
        reply = { error: (err as Error).message };
      }
      port.postMessage(reply satisfies WorkerMessage);
      return;
    }
  }
});
