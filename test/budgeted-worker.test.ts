import { once } from 'node:events';
import type { Worker } from 'node:worker_threads';
import { expect } from 'chai';
import { BudgetedWorker } from '../src/budgeted-worker.js';
import { HttpError } from '../src/errors.js';
import type { BacklogJob } from './support/backlog-worker.js';

type Reply = { id: number; thread: number };

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

  it("with a start signal, counts only the job's own time, not the backlog the worker works through first", async () => {
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

describe('BudgetedWorker: a successor', function () {
  this.timeout(20_000);
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  function handedOver() {
    const events: string[] = [];
    const workers: Worker[] = [];
    const w = new BudgetedWorker<BacklogJob, Reply, Reply>({
      module: new URL('./support/backlog-worker.js', import.meta.url),
      heapMb: 64,
      budgetMs: 5000,
      maxWaiting: 4,
      eager: true,
      isReady: (m) => (m as { kind?: string }).kind === 'ready',
      isStarted: (m) => (m as { kind?: string }).kind === 'started',
      settle: (reply) => reply,
      overBudget: () => new HttpError(503, 'over_budget', { message: 'over budget' }),
      lost: () => new HttpError(503, 'lost', { message: 'lost' }),
      busy: () => new HttpError(503, 'busy', { message: 'busy' }),
      started: (worker, successor) => {
        workers.push(worker);
        events.push(`started ${successor ? 'successor' : 'worker'} ${worker.threadId}`);
      },
      tookOver: (worker) => events.push(`took over ${worker.threadId}`),
      successorGone: (worker) => events.push(`gone ${worker.threadId}`),
    });
    return { w, events, workers };
  }

  it('takes over once ready and handed over to, between two jobs: the job running ends on the worker before, the next runs on the successor, and the worker before is stopped', async () => {
    const { w, events, workers } = handedOver();
    try {
      const first = await w.run({ id: 1, backlogMs: 0, workMs: 1 });
      const exited = once(workers[0], 'exit');
      const long = w.run({ id: 2, backlogMs: 0, workMs: 800 });
      await sleep(100);
      expect(w.startSuccessor()).to.equal(true);
      expect(w.startSuccessor(), 'one at a time').to.equal(false);
      const successor = Number(events.at(-1)!.split(' ').pop());
      expect(events.at(-1)).to.equal(`started successor ${successor}`);
      w.handOver();
      // Ready at once, but a job runs: it waits.
      await sleep(300);
      expect(events.some((e) => e.startsWith('took over'))).to.equal(false);
      expect(await long).to.deep.equal({ id: 2, thread: first.thread });
      expect(events.at(-1)).to.equal(`took over ${successor}`);
      expect(await w.run({ id: 3, backlogMs: 0, workMs: 1 })).to.deep.equal({ id: 3, thread: successor });
      expect(w.worker!.threadId).to.equal(successor);
      await exited;
    } finally {
      await w.close();
    }
  });

  it('given up, it is stopped and the worker of the moment stays; one not handed over to stays aside, and takes over at once when the worker of the moment is replaced', async () => {
    const { w, events } = handedOver();
    try {
      const first = await w.run({ id: 1, backlogMs: 0, workMs: 1 });
      const running = w.run({ id: 2, backlogMs: 0, workMs: 2000 });
      await sleep(100);
      w.startSuccessor();
      const dropped = Number(events.at(-1)!.split(' ').pop());
      w.dropSuccessor();
      expect(events.at(-1)).to.equal(`gone ${dropped}`);
      expect(await running).to.deep.equal({ id: 2, thread: first.thread });
      w.startSuccessor();
      const successor = Number(events.at(-1)!.split(' ').pop());
      await sleep(300);
      expect(await w.run({ id: 3, backlogMs: 0, workMs: 1 })).to.deep.equal({ id: 3, thread: first.thread });
      w.replace(new HttpError(503, 'replaced', { message: 'replaced' }));
      expect(events.at(-1)).to.equal(`took over ${successor}`);
      expect(await w.run({ id: 4, backlogMs: 0, workMs: 1 })).to.deep.equal({ id: 4, thread: successor });
    } finally {
      await w.close();
    }
  });
});
