// Shards (engine/shards.ts): which shard a knowledge base hashes to, NODE_SHARDS as written by
// operators, and whether a snapshot's shards hold what a node needs.
import { describe, expect, test } from 'bun:test';
import { newId, ShardSet, shardOf } from '../../engine';

describe('shards', () => {
  test('knowledge bases spread evenly over the shards, always to the same one', () => {
    const counts = new Array(8).fill(0);
    for (let i = 0; i < 8000; i++) {
      const id = newId('kb');
      const shard = shardOf(id, 8);
      expect(shardOf(id, 8)).toBe(shard);
      counts[shard]++;
    }
    // 1,000 expected per shard; a fair hash stays well within ±15%.
    for (const c of counts) expect(Math.abs(c - 1000)).toBeLessThan(150);
    expect(shardOf('kb_anything', 1)).toBe(0);
  });

  test('NODE_SHARDS: all, lists and ranges; mistakes are named', () => {
    expect(ShardSet.parse(undefined, 4).held).toEqual([0, 1, 2, 3]);
    expect(ShardSet.parse('all', 4).holdsAll).toBe(true);
    expect(ShardSet.parse(' 0, 2-3 ', 4).held).toEqual([0, 2, 3]);
    expect(ShardSet.parse('3,1,1', 4).held).toEqual([1, 3]);
    expect(() => ShardSet.parse('4', 4)).toThrow('shard 4 does not exist: shards are 0…3');
    expect(() => ShardSet.parse('2-1', 4)).toThrow('the range "2-1" is empty');
    expect(() => ShardSet.parse('one', 4)).toThrow('"one" is not a shard');
    expect(() => ShardSet.parse('0', 0)).toThrow('the shard count must be an integer from 1 to 1024');
  });

  test('a node holds a knowledge base exactly when it holds its shard', () => {
    const set = ShardSet.parse('1', 2);
    for (let i = 0; i < 100; i++) {
      const id = newId('kb');
      expect(set.holds(id)).toBe(shardOf(id, 2) === 1);
    }
    expect(ShardSet.all(2).holds(newId('kb'))).toBe(true);
  });

  test('a snapshot covers a node when it holds every shard the node holds', () => {
    const mine = ShardSet.parse('1,2', 4);
    expect(mine.coveredBy(undefined)).toBe(true); // made by a node holding everything
    expect(mine.coveredBy({ count: 4, held: [0, 1, 2] })).toBe(true);
    expect(mine.coveredBy({ count: 4, held: [1] })).toBe(false);
    expect(mine.coveredBy({ count: 2, held: [0] })).toBe(false); // another shard count
    expect(mine.coveredBy({ count: 2, held: [0, 1] })).toBe(true); // all of another count is all
  });
});
