import { expect } from 'chai';
import { RequestBatches } from '../src/store/sparql-engine/request-batches.js';

/** A read that answers when told to: what the batches sent, in order, each settled by the test. */
function heldReads() {
  const sent: { keys: number[]; answer: () => void; fail: (err: Error) => void }[] = [];
  const read = (keys: number[]) =>
    new Promise<string[]>((resolve, reject) => {
      sent.push({ keys, answer: () => resolve(keys.map((k) => `value ${k}`)), fail: reject });
    });
  return { sent, read };
}

const settled = () => new Promise((resolve) => setImmediate(resolve));

describe('read batches: single reads that go to the engine together while it is busy', () => {
  it('sends a read at once while fewer than the limit are out, and those asked meanwhile together after', async () => {
    const { sent, read } = heldReads();
    const batches = new RequestBatches(read, 2, 3);
    const answers = [1, 2, 3, 4, 5, 6].map((k) => batches.get(k));
    expect(sent.map((s) => s.keys)).to.deep.equal([[1], [2]]);
    sent[0].answer();
    await settled();
    // At most three in one read.
    expect(sent.map((s) => s.keys)).to.deep.equal([[1], [2], [3, 4, 5]]);
    sent[1].answer();
    await settled();
    expect(sent.map((s) => s.keys)).to.deep.equal([[1], [2], [3, 4, 5], [6]]);
    sent[2].answer();
    sent[3].answer();
    expect(await Promise.all(answers)).to.deep.equal([1, 2, 3, 4, 5, 6].map((k) => `value ${k}`));
    // Idle again: the next read waits for nothing.
    const later = batches.get(7);
    expect(sent.at(-1)!.keys).to.deep.equal([7]);
    sent.at(-1)!.answer();
    expect(await later).to.equal('value 7');
  });

  it('fails the reads of a failed batch only, and sends the next after it', async () => {
    const { sent, read } = heldReads();
    const batches = new RequestBatches(read, 1, 10);
    const first = batches.get(1);
    const [second, third] = [batches.get(2), batches.get(3)];
    sent[0].fail(new Error('engine unavailable'));
    const outcome = await first.then(
      () => 'answered',
      (err: Error) => err.message,
    );
    expect(outcome).to.equal('engine unavailable');
    await settled();
    expect(sent.map((s) => s.keys)).to.deep.equal([[1], [2, 3]]);
    sent[1].answer();
    expect(await Promise.all([second, third])).to.deep.equal(['value 2', 'value 3']);
  });
});
