import { describe, expect, it } from 'vitest';
import { TurnBatch } from './turn-batch.ts';

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('TurnBatch', () => {
  const source = (calls: string[][], fail?: string) =>
    new TurnBatch<string, number>(async (keys) => {
      calls.push(keys);
      if (fail && keys.includes(fail)) throw new Error(`cannot read ${fail}`);
      return new Map(keys.filter((k) => k !== 'missing').map((k) => [k, k.length]));
    }, 3);

  it('fetches the keys asked for in one turn together, each once, and gives each caller its value', async () => {
    const calls: string[][] = [];
    const batch = source(calls);
    const results = Promise.all([batch.load('a'), batch.load('bb'), batch.load('a'), batch.load('missing')]);
    expect(calls).toEqual([]);
    expect(await results).toEqual([1, 2, 1, undefined]);
    expect(calls).toEqual([['a', 'bb', 'missing']]);
  });

  it('starts a new fetch for keys asked for in a later turn', async () => {
    const calls: string[][] = [];
    const batch = source(calls);
    expect(await batch.load('a')).toBe(1);
    await nextTurn();
    expect(await batch.load('a')).toBe(1);
    expect(calls).toEqual([['a'], ['a']]);
  });

  it('splits a large turn into fetches of at most max keys', async () => {
    const calls: string[][] = [];
    const batch = source(calls);
    const keys = ['a', 'b', 'c', 'dd', 'ee', 'fff', 'g'];
    expect(await Promise.all(keys.map((k) => batch.load(k)))).toEqual([1, 1, 1, 2, 2, 3, 1]);
    expect(calls).toEqual([['a', 'b', 'c'], ['dd', 'ee', 'fff'], ['g']]);
  });

  it('gathers the keys asked for while fetches are in flight, and fetches them together when one ends', async () => {
    const calls: string[][] = [];
    const release: (() => void)[] = [];
    const batch = new TurnBatch<string, number>(
      (keys) => {
        calls.push(keys);
        return new Promise((resolve) => release.push(() => resolve(new Map(keys.map((k) => [k, k.length])))));
      },
      100,
      1,
    );
    const a = batch.load('a');
    await nextTurn();
    expect(calls).toEqual([['a']]);
    const b = batch.load('bb');
    await nextTurn();
    const c = batch.load('ccc');
    await nextTurn();
    expect(calls).toEqual([['a']]);
    release.shift()!();
    expect(await a).toBe(1);
    for (let i = 0; i < 3 && calls.length < 2; i++) await nextTurn();
    expect(calls).toEqual([['a'], ['bb', 'ccc']]);
    release.shift()!();
    expect(await Promise.all([b, c])).toEqual([2, 3]);
  });

  it("rejects only the callers of a failed fetch, with the fetch's error", async () => {
    const calls: string[][] = [];
    const batch = source(calls, 'dd');
    const all = ['a', 'b', 'c', 'dd', 'e'].map((k) =>
      batch.load(k).then(
        (v) => v,
        (e: Error) => e.message,
      ),
    );
    expect(await Promise.all(all)).toEqual([1, 1, 1, 'cannot read dd', 'cannot read dd']);
  });
});
