// The order in which queued content is indexed: fair across tenants. Entries wait in one FIFO lane
// per knowledge base; lanes are grouped by organization. Each turn serves one batch from one lane,
// chosen round robin across the organizations with entries waiting, and within the chosen
// organization round robin across its knowledge bases. So one organization's backlog (or one
// knowledge base's) never holds back another's small write for longer than one round of turns.
// Pure bookkeeping: nothing here knows about knowledge bases, workers or time.

/** A first-in first-out list whose shift is O(1) (Array#shift copies large arrays). */
class Fifo<T> {
  private items: T[] = [];
  private head = 0;

  get size(): number {
    return this.items.length - this.head;
  }

  push(item: T): void {
    this.items.push(item);
  }

  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const item = this.items[this.head]!;
    this.items[this.head++] = undefined as T; // let it go
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }
}

/**
 * Members taking turns. The member served last rejoins the line only when the next turn is taken,
 * so a member that arrives meanwhile goes before it: a newcomer waits for every member already in
 * line, but not for another turn of the one that has just been served (even when that one was
 * alone).
 */
class Rotation<V> {
  private readonly members = new Map<string, V>();
  /** Waiting for their turn, next first. */
  private line = new Fifo<string>();
  /** Served last; back in line at the next turn. */
  private last: string | undefined;

  get size(): number {
    return this.members.size;
  }

  get(key: string): V | undefined {
    return this.members.get(key);
  }

  /** A new member: last in line. */
  add(key: string, value: V): void {
    this.members.set(key, value);
    this.line.push(key);
  }

  /** Whose turn it is (undefined when there are no members). */
  next(): [string, V] | undefined {
    if (this.last !== undefined) this.line.push(this.last);
    this.last = undefined;
    const key = this.line.shift();
    if (key === undefined) return undefined;
    this.last = key;
    return [key, this.members.get(key)!];
  }

  /** The member just served has nothing left: it leaves (and gets a new place in line if it comes back). */
  removeLast(): void {
    if (this.last !== undefined) this.members.delete(this.last);
    this.last = undefined;
  }
}

/** What the caller makes of each entry offered for a batch. */
export type Verdict =
  /** In the batch; offer the next entry. */
  | 'take'
  /** In the batch, and the batch is full. */
  | 'last'
  /** Out of the queue, not in the batch (deleted or superseded); offer the next entry. */
  | 'drop';

export interface Batch<T> {
  org: string;
  lane: string;
  entries: T[];
}

/** Entries of many lanes (knowledge bases) of many organizations, taken one fair batch at a time. */
export class FairQueue<T> {
  private readonly orgs = new Rotation<Rotation<Fifo<T>>>();
  private count = 0;

  /** Entries waiting. */
  get size(): number {
    return this.count;
  }

  /** Organizations with entries waiting. */
  get organizations(): number {
    return this.orgs.size;
  }

  push(org: string, lane: string, entry: T): void {
    let lanes = this.orgs.get(org);
    if (!lanes) this.orgs.add(org, (lanes = new Rotation()));
    let fifo = lanes.get(lane);
    if (!fifo) lanes.add(lane, (fifo = new Fifo()));
    fifo.push(entry);
    this.count++;
  }

  /**
   * The next batch: up to `max` entries, in order, of the lane whose turn it is. Each entry is
   * offered to `judge` first. A turn whose entries were all dropped does not count: the next lane
   * is tried. Undefined when nothing is left.
   */
  take(max: number, judge: (entry: T) => Verdict): Batch<T> | undefined {
    for (;;) {
      const org = this.orgs.next();
      if (!org) return undefined;
      const [orgKey, lanes] = org;
      const [laneKey, fifo] = lanes.next()!;
      const entries: T[] = [];
      while (entries.length < max) {
        const entry = fifo.shift();
        if (entry === undefined) break;
        this.count--;
        const verdict = judge(entry);
        if (verdict === 'drop') continue;
        entries.push(entry);
        if (verdict === 'last') break;
      }
      if (fifo.size === 0) {
        lanes.removeLast();
        if (lanes.size === 0) this.orgs.removeLast();
      }
      if (entries.length > 0) return { org: orgKey, lane: laneKey, entries };
    }
  }
}
