// Shards (cluster mode): knowledge bases hash to `count` shards, and a node holds some of them
// (default: all). Knowledge-base records (create, rename, delete) apply on every node, so listing
// and quotas on knowledge bases answer anywhere; content records apply only on the nodes holding
// the knowledge base's shard, and requests about a knowledge base go to such a node.

/** Which shard a knowledge base belongs to: FNV-1a of its id, modulo the shard count. */
export function shardOf(kbId: string, count: number): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < kbId.length; i++) {
    hash ^= kbId.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % count;
}

export class ShardSet {
  /** Shards held, ascending. */
  readonly held: readonly number[];
  private readonly holding: readonly boolean[];

  constructor(
    readonly count: number,
    held?: Iterable<number>,
  ) {
    if (!Number.isInteger(count) || count < 1 || count > 1024) throw new Error(`the shard count must be an integer from 1 to 1024 (got ${count})`);
    const set = new Set(held ?? Array.from({ length: count }, (_, i) => i));
    for (const s of set) if (!Number.isInteger(s) || s < 0 || s >= count) throw new Error(`shard ${s} does not exist: shards are 0…${count - 1}`);
    if (set.size === 0) throw new Error('a node must hold at least one shard');
    this.held = [...set].sort((a, b) => a - b);
    this.holding = Array.from({ length: count }, (_, i) => set.has(i));
  }

  /** Every shard, as a single node holds them. */
  static all(count = 1): ShardSet {
    return new ShardSet(count);
  }

  /** `all`, or a list of shards and ranges: `0,2,5-7`. */
  static parse(spec: string | undefined, count: number): ShardSet {
    const text = (spec ?? '').trim();
    if (text === '' || text === 'all') return new ShardSet(count);
    const held: number[] = [];
    for (const part of text.split(',').map((p) => p.trim())) {
      const m = /^(\d+)(?:-(\d+))?$/.exec(part);
      if (!m) throw new Error(`"${part}" is not a shard or a range of shards (like 0,2,5-7)`);
      const from = Number(m[1]);
      const to = m[2] === undefined ? from : Number(m[2]);
      if (to < from) throw new Error(`the range "${part}" is empty`);
      for (let s = from; s <= to; s++) held.push(s);
    }
    return new ShardSet(count, held);
  }

  get holdsAll(): boolean {
    return this.held.length === this.count;
  }

  /** Whether this node applies the knowledge base's content and answers about it. */
  holds(kbId: string): boolean {
    return this.holdsAll || this.holding[shardOf(kbId, this.count)] === true;
  }

  shardOf(kbId: string): number {
    return shardOf(kbId, this.count);
  }

  /** Whether a state holding `other` has every knowledge base this set needs. */
  coveredBy(other: { count: number; held: readonly number[] } | undefined): boolean {
    // A snapshot without shards was made by a node holding everything.
    if (!other) return true;
    if (other.count !== this.count) return other.held.length === other.count;
    const theirs = new Set(other.held);
    return this.held.every((s) => theirs.has(s));
  }

  toJSON(): { count: number; held: number[] } {
    return { count: this.count, held: [...this.held] };
  }
}
