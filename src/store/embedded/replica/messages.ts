import type { Dataset, View } from '../../query-service.js';
import type { QueryForm, ResultFormat } from '../../sparql-query.js';
import type { PackedCommits } from './replica-commits.js';

// The messages between the request thread and the replica's worker thread.

export interface QueryJob {
  kind: 'query';
  view: View;
  form: QueryForm;
  text: string;
  format: ResultFormat;
  maxRows: number;
  /** Absent: the view's own dataset, whole. */
  dataset?: Dataset;
}

/**
 * What feeds the replica, in the order it must apply it: for a new worker `start`, copies of the hot store (`meta`,
 * `hot`) and archived history (`history`, newest first) with commits made meanwhile in between, `loaded`, then
 * batches of commits. Positions count commits since start; they share the query port, so a query sent after a
 * batch runs after it (docs/sparql-replica.md).
 */
export type FeedMessage =
  | {
      kind: 'start';
      historyMaxQuads: number;
      queryReserveBytes?: number;
      memoryLimitBytes?: number;
      longGrowthFrom?: number;
      standby: boolean;
      handedOverFor?: number;
    }
  | { kind: 'meta'; nquads: string }
  | { kind: 'hot'; nquads: string }
  | { kind: 'history'; entries: string[] }
  | { kind: 'loaded'; position: number }
  | { kind: 'commits'; commits: PackedCommits; position: number };

/** Messages to the worker, in order. */
export type WorkerRequest = FeedMessage | QueryJob;

/** A query's answer; `position`: the last commit the replica had applied when it ran the query. */
export interface QueryAnswer {
  body: string;
  truncated: boolean;
  position: number;
}

export type QueryReply = QueryAnswer | { error: string };

/**
 * Messages from the worker: its replica is loaded, it has applied every commit up to `position`,
 * its memory can take no more (it applies nothing from then on), its thread may not raise its CPU
 * priority back after a query, it is near a long growth point of its tables (see table-growth.ts),
 * it grew its copy's tables past one (or could not), it has begun the query it was sent, the query's reply.
 */
export type WorkerMessage =
  | { kind: 'loaded' }
  | { kind: 'applied'; position: number }
  | { kind: 'full'; message: string; reclaimable: boolean }
  | { kind: 'priority'; message: string }
  | { kind: 'growing'; loadedQuads: number; point: number }
  | { kind: 'tables'; point: number; quads: number; grown: boolean }
  | { kind: 'started' }
  | QueryReply;
