import { expect } from 'chai';
import { BoundedCache } from '../src/bounded-cache.js';

const keysOf = (cache: BoundedCache<number, string>, upTo: number) =>
  Array.from({ length: upTo }, (_, k) => k).filter((k) => cache.get(k) !== undefined);

describe('BoundedCache', () => {
  it('forgets the entry set longest ago once full, whatever was deleted or set again meanwhile', () => {
    const cache = new BoundedCache<number, string>(3);
    for (const k of [0, 1, 2]) cache.set(k, `v${k}`);
    cache.set(3, 'v3');
    expect(keysOf(cache, 10)).to.deep.equal([1, 2, 3]);
    // Setting a held key again keeps its place; a deleted key set again goes last.
    cache.set(1, 'again');
    cache.delete(2);
    cache.set(2, 'back');
    cache.set(4, 'v4');
    expect(keysOf(cache, 10)).to.deep.equal([2, 3, 4]);
    expect(cache.get(2)).to.equal('back');
    cache.set(5, 'v5');
    expect(keysOf(cache, 10)).to.deep.equal([2, 4, 5]);
  });

  it('keeps evicting in order after it was emptied and filled again', () => {
    const cache = new BoundedCache<number, string>(2);
    for (const k of [0, 1, 2]) cache.set(k, `v${k}`);
    cache.delete(1);
    cache.delete(2);
    expect(cache.size).to.equal(0);
    for (const k of [5, 6, 7, 8]) cache.set(k, `v${k}`);
    expect(keysOf(cache, 10)).to.deep.equal([7, 8]);
  });

  it('bounds the sum of weights, keeping at least the entry just set', () => {
    const cache = new BoundedCache<number, string>(10, (v) => v.length);
    cache.set(0, 'aaaa');
    cache.set(1, 'bbbb');
    cache.set(2, 'cccc');
    expect(keysOf(cache, 5)).to.deep.equal([1, 2]);
    cache.set(3, 'x'.repeat(20));
    expect(keysOf(cache, 5)).to.deep.equal([3]);
    cache.set(4, 'dd');
    expect(keysOf(cache, 5)).to.deep.equal([4]);
  });

  it('matches a FIFO model over a long mixed run of sets and deletes', () => {
    const cache = new BoundedCache<number, string>(50);
    const model = new Map<number, string>();
    let seed = 7;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    for (let i = 0; i < 20_000; i++) {
      const key = Math.floor(random() * 120);
      if (random() < 0.3) {
        cache.delete(key);
        model.delete(key);
      } else {
        cache.set(key, `v${i}`);
        model.set(key, `v${i}`);
        while (model.size > 50) model.delete(model.keys().next().value as number);
      }
    }
    expect(cache.size).to.equal(model.size);
    for (const [k, v] of model) expect(cache.get(k)).to.equal(v);
  });
});
