import { parentPort, threadId } from 'node:worker_threads';

/**
 * A worker for the BudgetedWorker tests: for each job it first works through a "backlog"
 * (`backlogMs` of busy time, as the query replica applies writes posted before a query), then
 * says it has started, then works `workMs` and replies with the job's id and its thread's.
 */
export interface BacklogJob {
  id: number;
  backlogMs: number;
  workMs: number;
}

const busy = (ms: number) => {
  const until = Date.now() + ms;
  while (Date.now() < until);
};

parentPort!.postMessage({ kind: 'ready' });
parentPort!.on('message', (job: BacklogJob) => {
  busy(job.backlogMs);
  parentPort!.postMessage({ kind: 'started' });
  busy(job.workMs);
  parentPort!.postMessage({ id: job.id, thread: threadId });
});
