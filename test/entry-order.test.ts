import { expect } from 'chai';
import fc from 'fast-check';
import { EntryOrder, type QueuedEntry } from '../src/domain/pubsub/entry-order.js';
import type { OutboxEntry } from '../src/store/schema/outbox.js';

const queued = (sequence: number, iri = `urn:entry:${sequence}`): QueuedEntry => ({
  entry: { sequence, iri } as OutboxEntry,
});
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** An EntryOrder whose hand-overs are listed (number, and whether late). */
function order(options: { inFlight?: (n: number) => boolean; othersWaitMs?: number; awaitedMs?: number } = {}) {
  const out: { sequence: number; late: boolean }[] = [];
  const logged: string[] = [];
  const o = new EntryOrder(
    {
      inFlight: options.inFlight ?? (() => false),
      othersWaitMs: options.othersWaitMs ?? 0,
      awaitedMs: options.awaitedMs,
      log: (m) => logged.push(m),
    },
    (q, late) => out.push({ sequence: q.entry.sequence, late }),
  );
  return { o, out, logged, numbers: () => out.map((x) => x.sequence) };
}

describe('outbox entries handed to delivery in number order (EntryOrder)', () => {
  it('commits of this process ending in any order: each entry handed over once, in number order; a number whose commit failed is not waited for', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 40 }).chain((count) =>
          fc.tuple(
            fc.shuffledSubarray(
              Array.from({ length: count }, (_, i) => i + 1),
              { minLength: count, maxLength: count },
            ),
            fc.array(fc.boolean(), { minLength: count, maxLength: count }),
          ),
        ),
        ([arrival, failed]) => {
          // Numbers are in flight until their commit ends (published, or failed: those never come).
          const ended = new Set<number>();
          const { o, out, numbers } = order({ inFlight: (n) => !ended.has(n) });
          o.live(0);
          for (const n of arrival) {
            ended.add(n);
            if (!failed[n - 1]) o.add(queued(n));
            else o.released([]);
          }
          o.stop();
          const published = arrival.filter((n) => !failed[n - 1]).sort((a, b) => a - b);
          expect(numbers()).to.deep.equal(published);
          expect(out.every((x) => !x.late)).to.equal(true);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('a number another process may be writing is waited for othersWaitMs, then given up on; should it come later, it is handed over then, marked late', async () => {
    const { o, out, logged } = order({ othersWaitMs: 100 });
    o.live(0);
    o.add(queued(2));
    await pause(30);
    expect(out).to.deep.equal([]);
    o.add(queued(1));
    expect(out.map((x) => x.sequence)).to.deep.equal([1, 2]);
    o.add(queued(4));
    await pause(200);
    expect(out.map((x) => x.sequence)).to.deep.equal([1, 2, 4]);
    o.add(queued(3));
    expect(out[3]).to.deep.equal({ sequence: 3, late: true });
    expect(logged.join()).to.match(/entry 3 .*out of order/);
    // Twice published (an operation sent again): handed over once.
    o.add(queued(3));
    o.add(queued(4));
    expect(out).to.have.length(4);
    o.stop();
  });

  it('a number given up on for want of time or released by another process is awaited for awaitedMs: the lowest such is told until it comes or that passed; numbers missing at live below the entries removed are not', async () => {
    const { o, out } = order({ othersWaitMs: 50, awaitedMs: 400 });
    o.live(2);
    expect(o.oldestAwaited(), 'missing at live').to.equal(undefined);
    o.released([3]);
    o.add(queued(5));
    o.add(queued(7));
    await pause(250);
    // 3 released, not waited for (yet a third process may have written it); 4, then 6, given up on after 50 ms each.
    expect(o.oldestAwaited(), 'released').to.equal(3);
    o.add(queued(3));
    expect(
      out.find((h) => h.sequence === 3),
      'written after all',
    ).to.deep.equal({ sequence: 3, late: true });
    expect(o.oldestAwaited(), 'once 3 came').to.equal(4);
    o.add(queued(4));
    expect(o.oldestAwaited(), 'once 4 came').to.equal(6);
    expect(o.oldestAwaited(Date.now() + 400), 'after awaitedMs').to.equal(undefined);
    o.add(queued(6));
    o.stop();

    // At live, the numbers missing after the entries removed (2 and 4: commits under way during the store read).
    const started = order({ awaitedMs: 400 });
    started.o.add(queued(1));
    started.o.add(queued(3));
    started.o.live(4, 1);
    expect(started.o.oldestAwaited()).to.equal(2);
    started.o.stop();
  });

  it('another entry under a number already handed over or held (two processes numbered alike) is handed over too, marked late', () => {
    const { o, out, logged } = order({ othersWaitMs: 60_000 });
    o.live(0);
    o.add(queued(1));
    o.add(queued(1, 'urn:other:1'));
    o.add(queued(3));
    o.add(queued(3, 'urn:other:3'));
    o.add(queued(2));
    expect(out).to.deep.equal([
      { sequence: 1, late: false },
      { sequence: 1, late: true },
      { sequence: 3, late: true },
      { sequence: 2, late: false },
      { sequence: 3, late: false },
    ]);
    expect(logged.join()).to.match(/shares its number/);
    o.stop();
  });

  it('numbers another process released are not waited for', () => {
    const { o, numbers } = order({ othersWaitMs: 60_000 });
    o.live(10);
    o.add(queued(13));
    expect(numbers()).to.deep.equal([]);
    o.released([11, 12]);
    expect(numbers()).to.deep.equal([13]);
    o.stop();
  });

  it('before live, entries pass as they come (the store read); at live, the numbers taken and not seen are taken late, those seen are not taken again', () => {
    const { o, out, numbers } = order({ othersWaitMs: 60_000 });
    for (const n of [3, 4, 6]) o.add(queued(n));
    o.live(8);
    // 5 and 7: commits under way while the store was read.
    o.add(queued(7));
    o.add(queued(4));
    o.add(queued(5));
    o.add(queued(9));
    expect(numbers()).to.deep.equal([3, 4, 6, 7, 5, 9]);
    expect(out.filter((x) => x.late).map((x) => x.sequence)).to.deep.equal([7, 5]);
    o.stop();
  });
});
