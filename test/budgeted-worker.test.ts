import { expect } from 'chai';
import { BudgetedWorker } from '../src/budgeted-worker.js';
import { HttpError } from '../src/errors.js';
import type { BacklogJob } from './support/backlog-worker.js';

type Reply = { id: number };

function worker(budgetMs: number, withStartSignal: boolean): BudgetedWorker<BacklogJob, Reply, number> {
  return new BudgetedWorker<BacklogJob, Reply, number>({
    module: new URL('./support/backlog-worker.js', import.meta.url),
    heapMb: 64,
    budgetMs,
    maxWaiting: 4,
    eager: true,
    isReady: (m) => (m as { kind?: string }).kind === 'ready',
    isStarted: withStartSignal ? (m) => (m as { kind?: string }).kind === 'started' : undefined,
    settle: (reply) => reply.id,
    overBudget: () => new HttpError(503, 'over_budget', { message: 'over budget' }),
    lost: () => new HttpError(503, 'lost', { message: 'lost' }),
    busy: () => new HttpError(503, 'busy', { message: 'busy' }),
  });
}

describe('BudgetedWorker: time budget', function () {
  this.timeout(20_000);

  it('with a start signal, counts only the job\'s own time, not the backlog the worker works through first', async () => {
    const w = worker(300, true);
    try {
      expect(await w.run({ id: 1, backlogMs: 900, workMs: 10 })).to.equal(1);
      const over = await w.run({ id: 2, backlogMs: 0, workMs: 2000 }).catch((err: HttpError) => err);
      expect(over).to.be.instanceOf(HttpError).and.to.include({ status: 503, code: 'over_budget' });
      // A new worker took over.
      expect(await w.run({ id: 3, backlogMs: 0, workMs: 1 })).to.equal(3);
    } finally {
      await w.close();
    }
  });

  it('without one, counts from the moment the job is posted', async () => {
    const w = worker(300, false);
    try {
      const over = await w.run({ id: 1, backlogMs: 900, workMs: 10 }).catch((err: HttpError) => err);
      expect(over).to.be.instanceOf(HttpError).and.to.include({ status: 503, code: 'over_budget' });
    } finally {
      await w.close();
    }
  });
});
