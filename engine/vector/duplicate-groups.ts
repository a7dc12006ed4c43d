// Documents whose vectors are the same in the HNSW graph's i8 view (boilerplate chunks, repeated
// notes, texts a model cannot tell apart) form a group, and only one of a group is a key in the
// graph. HNSW fails on exact duplicates: every neighbour list of a duplicate fills with other
// duplicates at distance 0, so the graph has no way out of the cluster and a unique vector close
// to it is never found (a note about "truck engine" among 400 identical "car" notes was missed
// even at k = 100). A search expands each key it finds to the members of its group, which are
// re-scored exactly on their own stored vectors like every candidate.
//
// Per document: a circular doubly linked list of its group (next/prev), its hash, and whether it
// is a key (in the graph or waiting to be). A table from hash to one member finds the group of a
// new vector; the caller confirms the match on the stored rows (a hash is not proof).

const EMPTY = -1;
const GONE = -2;
const MIN_SLOTS = 16;

/** The i8 form of one value of a unit vector scaled by `scale` (127 for f32, 1 for stored i8). */
export const i8Of = (value: number, scale: number): number => Math.max(-127, Math.min(127, Math.round(value * scale)));

/**
 * Dimensions hashed, spread over the vector: equal i8 forms hash alike whatever the choice, and
 * distinct vectors that collide are told apart on their rows (a read each, so not too few).
 */
const HASHED_DIMENSIONS = 48;

/**
 * FNV-1a over the i8 form (round(v × scale), clamped) of HASHED_DIMENSIONS of a vector's values,
 * evenly spaced: 0.19 s for 100k vectors of 384 dimensions hashed whole, ~0.03 s this way (restart time).
 */
export function quantizedHash(values: ArrayLike<number>, scale: number): number {
  let h = 0x811c9dc5;
  const step = Math.max(1, Math.floor(values.length / HASHED_DIMENSIONS));
  for (let i = 0; i < values.length; i += step) {
    const q = i8Of(values[i]!, scale);
    h = Math.imul(h ^ (q & 0xff), 0x01000193);
  }
  return h >>> 0;
}

/** The groups as flat arrays (copies of the live ones), for an index dump (snapshots/index-dump.ts). */
export interface DuplicateGroupsDump {
  next: Int32Array;
  prev: Int32Array;
  hashes: Uint32Array;
  keyed: Uint8Array;
  slotHash: Uint32Array;
  slotDoc: Int32Array;
  used: number;
}

export class DuplicateGroups {
  private next: Int32Array = new Int32Array(0);
  private prev: Int32Array = new Int32Array(0);
  private hashes: Uint32Array = new Uint32Array(0);
  private keyed: Uint8Array = new Uint8Array(0);
  private slotHash: Uint32Array = new Uint32Array(MIN_SLOTS);
  private slotDoc: Int32Array = new Int32Array(MIN_SLOTS).fill(EMPTY);
  private used = 0;

  /** Room for documents below `capacity`. */
  grow(capacity: number): void {
    if (capacity <= this.next.length) return;
    // Doubling from 16: a small knowledge base keeps small arrays.
    let size = Math.max(16, this.next.length);
    while (size < capacity) size *= 2;
    capacity = size;
    const extend = <T extends Int32Array | Uint32Array | Uint8Array>(a: T, make: (n: number) => T): T => {
      const b = make(capacity);
      b.set(a);
      return b;
    };
    this.next = extend(this.next, (n) => new Int32Array(n));
    this.prev = extend(this.prev, (n) => new Int32Array(n));
    this.hashes = extend(this.hashes, (n) => new Uint32Array(n));
    this.keyed = extend(this.keyed, (n) => new Uint8Array(n));
  }

  /**
   * Put `doc` in the group of an earlier document with the same hash for which `same` holds, or in
   * a group of its own. Returns true when it started a group: it is a key, to go into the graph.
   */
  join(doc: number, hash: number, same: (other: number) => boolean): boolean {
    this.grow(doc + 1);
    const mask = this.slotDoc.length - 1;
    for (let s = hash & mask; ; s = (s + 1) & mask) {
      const d = this.slotDoc[s]!;
      if (d === EMPTY) break;
      if (d !== GONE && this.slotHash[s] === hash && same(d)) {
        // Linked in after the member the table names.
        const after = this.next[d]!;
        this.next[d] = doc;
        this.prev[doc] = d;
        this.next[doc] = after;
        this.prev[after] = doc;
        this.hashes[doc] = hash;
        this.keyed[doc] = 0;
        return false;
      }
    }
    this.next[doc] = doc;
    this.prev[doc] = doc;
    this.hashes[doc] = hash;
    this.keyed[doc] = 1;
    this.insertSlot(hash, doc);
    return true;
  }

  /**
   * Take `doc` out of its group. Returns a member that must become a key in its place (`doc` was a
   * key and the next member is not one), else undefined.
   */
  leave(doc: number): number | undefined {
    const after = this.next[doc]!;
    const wasKey = this.keyed[doc] === 1;
    this.keyed[doc] = 0;
    const slot = this.slotOf(doc);
    if (after === doc) {
      if (slot >= 0) this.slotDoc[slot] = GONE;
      return undefined;
    }
    const before = this.prev[doc]!;
    this.next[before] = after;
    this.prev[after] = before;
    this.next[doc] = doc;
    this.prev[doc] = doc;
    if (slot >= 0) this.slotDoc[slot] = after;
    if (!wasKey || this.keyed[after] === 1) return undefined;
    this.keyed[after] = 1;
    return after;
  }

  /** Whether `doc` is (or is waiting to become) a key of the graph. */
  isKey(doc: number): boolean {
    return this.keyed[doc] === 1;
  }

  /** Mark `doc` as a key (it is in a graph loaded from a snapshot). */
  markKey(doc: number): void {
    this.keyed[doc] = 1;
  }

  /** Visit `doc` and then the other members of its group, at most `max` in all. */
  visit(doc: number, max: number, visit: (member: number) => void): void {
    let d = doc;
    for (let n = 0; n < max; n++) {
      visit(d);
      d = this.next[d]!;
      if (d === doc) return;
    }
  }

  dump(): DuplicateGroupsDump {
    // Copies: joins and removals rewrite links and slots in place (a dump is written after this returns).
    const { next, prev, hashes, keyed, slotHash, slotDoc, used } = this;
    return { next: next.slice(), prev: prev.slice(), hashes: hashes.slice(), keyed: keyed.slice(), slotHash: slotHash.slice(), slotDoc: slotDoc.slice(), used };
  }

  /** Take over groups dumped by `dump` (their arrays are kept, not copied); throws when they do not fit together. */
  load(d: DuplicateGroupsDump): void {
    const n = d.next.length;
    const slots = d.slotDoc.length;
    if (d.prev.length !== n || d.hashes.length !== n || d.keyed.length !== n) throw new Error('duplicate groups: per-document arrays of different lengths');
    if (slots < MIN_SLOTS || (slots & (slots - 1)) !== 0 || d.slotHash.length !== slots || d.used > slots)
      throw new Error('duplicate groups: a malformed table');
    for (let i = 0; i < n; i++) if (d.next[i]! >= n || d.prev[i]! >= n) throw new Error(`duplicate groups: document ${i} links past ${n}`);
    for (let s = 0; s < slots; s++) if (d.slotDoc[s]! >= n) throw new Error(`duplicate groups: slot ${s} names a document past ${n}`);
    ({ next: this.next, prev: this.prev, hashes: this.hashes, keyed: this.keyed, slotHash: this.slotHash, slotDoc: this.slotDoc, used: this.used } = d);
  }

  /** Forget everything (the index was closed). */
  clear(): void {
    this.next = new Int32Array(0);
    this.prev = new Int32Array(0);
    this.hashes = new Uint32Array(0);
    this.keyed = new Uint8Array(0);
    this.slotHash = new Uint32Array(MIN_SLOTS);
    this.slotDoc = new Int32Array(MIN_SLOTS).fill(EMPTY);
    this.used = 0;
  }

  memoryBytes(): number {
    return this.next.byteLength * 2 + this.hashes.byteLength + this.keyed.byteLength + this.slotHash.byteLength + this.slotDoc.byteLength;
  }

  /** The table slot naming `doc`, or −1. */
  private slotOf(doc: number): number {
    const hash = this.hashes[doc]!;
    const mask = this.slotDoc.length - 1;
    for (let s = hash & mask; ; s = (s + 1) & mask) {
      const d = this.slotDoc[s]!;
      if (d === EMPTY) return -1;
      if (d === doc) return s;
    }
  }

  private insertSlot(hash: number, doc: number): void {
    // Tombstones count as used until the next resize (a probe walks over them).
    if ((this.used + 1) * 2 > this.slotDoc.length) this.resize(this.slotDoc.length * 2);
    const mask = this.slotDoc.length - 1;
    let s = hash & mask;
    while (this.slotDoc[s]! !== EMPTY) s = (s + 1) & mask;
    this.slotDoc[s] = doc;
    this.slotHash[s] = hash;
    this.used++;
  }

  private resize(size: number): void {
    const oldDoc = this.slotDoc;
    const oldHash = this.slotHash;
    // Tombstones are dropped: the live entries alone may need fewer slots (at most half used).
    let live = 0;
    for (let s = 0; s < oldDoc.length; s++) if (oldDoc[s]! >= 0) live++;
    while (live * 4 < size && size > MIN_SLOTS) size /= 2;
    while ((live + 1) * 2 > size) size *= 2;
    this.slotDoc = new Int32Array(size).fill(EMPTY);
    this.slotHash = new Uint32Array(size);
    this.used = 0;
    const mask = size - 1;
    for (let i = 0; i < oldDoc.length; i++) {
      const d = oldDoc[i]!;
      if (d < 0) continue;
      let s = oldHash[i]! & mask;
      while (this.slotDoc[s]! !== EMPTY) s = (s + 1) & mask;
      this.slotDoc[s] = d;
      this.slotHash[s] = oldHash[i]!;
      this.used++;
    }
  }
}
