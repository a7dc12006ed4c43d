// The term ids of each document (what a delete or a grouping walks), packed in one byte pool
// instead of an Int32Array per document (issue 25): a document's ids are sorted and stored as a
// varint count followed by varint gaps (about 2 bytes an id instead of 4, and no object per
// document). Ids listed twice stay twice (a gap of 0). A removed document's bytes are dead until
// they make up half of the pool, which is then rewritten without them.

const NONE = 0xffffffff;

export class DocTerms {
  private pool = new Uint8Array(4096);
  private used = 0;
  private dead = 0;
  /** Per document: where its entry starts in the pool, NONE when it has none. */
  private offsets = new Uint32Array(1024).fill(NONE);
  private scratch = new Int32Array(256);
  /** Compactions of the pool so far (index deltas continue a pool only while this is unchanged). */
  rewrites = 0;

  /** Bytes held (pool and offsets). */
  get byteLength(): number {
    return this.pool.byteLength + this.offsets.byteLength;
  }

  has(doc: number): boolean {
    return doc < this.offsets.length && this.offsets[doc] !== NONE;
  }

  set(doc: number, ids: Int32Array): void {
    if (this.has(doc)) this.delete(doc);
    if (doc >= this.offsets.length) {
      let cap = this.offsets.length;
      while (cap <= doc) cap *= 2;
      const o = new Uint32Array(cap).fill(NONE);
      o.set(this.offsets);
      this.offsets = o;
    }
    const sorted = Int32Array.from(ids).sort();
    // At most 5 bytes per varint.
    this.reserve(5 * (sorted.length + 1));
    if (this.used > NONE - 1) throw new Error('document term pool over 4 GiB');
    this.offsets[doc] = this.used;
    let at = this.writeVarint(this.used, sorted.length);
    let prev = 0;
    for (let i = 0; i < sorted.length; i++) {
      at = this.writeVarint(at, sorted[i]! - prev);
      prev = sorted[i]!;
    }
    this.used = at;
  }

  /**
   * The document's ids, ascending, in a scratch array valid until the next call (length: the
   * returned count); 0 when it has none.
   */
  read(doc: number): { ids: Int32Array; count: number } {
    if (!this.has(doc)) return { ids: this.scratch, count: 0 };
    const pool = this.pool;
    let at = this.offsets[doc]!;
    let count = 0;
    let shift = 0;
    for (;;) {
      const b = pool[at++]!;
      count |= (b & 0x7f) << shift;
      if (b < 0x80) break;
      shift += 7;
    }
    if (this.scratch.length < count) this.scratch = new Int32Array(Math.max(count, this.scratch.length * 2));
    const out = this.scratch;
    let prev = 0;
    for (let i = 0; i < count; i++) {
      let gap = 0;
      shift = 0;
      for (;;) {
        const b = pool[at++]!;
        gap |= (b & 0x7f) << shift;
        if (b < 0x80) break;
        shift += 7;
      }
      prev += gap;
      out[i] = prev;
    }
    return { ids: out, count };
  }

  delete(doc: number): void {
    if (!this.has(doc)) return;
    this.dead += this.entryBytes(this.offsets[doc]!);
    this.offsets[doc] = NONE;
    if (this.dead * 2 > this.used && this.used > 1 << 16) this.compact();
  }

  private entryBytes(start: number): number {
    const pool = this.pool;
    let at = start;
    let count = 0;
    let shift = 0;
    for (;;) {
      const b = pool[at++]!;
      count |= (b & 0x7f) << shift;
      if (b < 0x80) break;
      shift += 7;
    }
    for (let i = 0; i < count; i++) while (pool[at++]! >= 0x80);
    return at - start;
  }

  /** Rewrite the pool with the live entries only, in document order. */
  private compact(): void {
    const next = new Uint8Array(Math.max(4096, Math.ceil((this.used - this.dead) * 1.25)));
    let w = 0;
    for (let d = 0; d < this.offsets.length; d++) {
      const start = this.offsets[d]!;
      if (start === NONE) continue;
      const n = this.entryBytes(start);
      next.set(this.pool.subarray(start, start + n), w);
      this.offsets[d] = w;
      w += n;
    }
    this.pool = next;
    this.used = w;
    this.dead = 0;
    this.rewrites++;
  }

  private reserve(bytes: number): void {
    if (this.used + bytes <= this.pool.length) return;
    // Grows by a quarter: the pool is a large share of the index, so its slack is kept small.
    const next = new Uint8Array(Math.max(this.used + bytes, Math.ceil(this.pool.length * 1.25)));
    next.set(this.pool.subarray(0, this.used));
    this.pool = next;
  }

  private writeVarint(at: number, value: number): number {
    const pool = this.pool;
    while (value >= 0x80) {
      pool[at++] = (value & 0x7f) | 0x80;
      value >>>= 7;
    }
    pool[at++] = value;
    return at;
  }

  /** The pool as it is (a view: later entries go past it, a compaction into a new pool) and a copy of the offsets. */
  dump(): DocTermsDump {
    // The pool is only appended to or replaced; offsets change in place (deletes): a copy.
    return { pool: this.pool.subarray(0, this.used), offsets: this.offsets.slice(), dead: this.dead };
  }

  /** Take over a dump; the pool becomes a view of its array (no copy) until it next grows. */
  load(d: DocTermsDump): void {
    if (this.used > 0) throw new Error('document terms load into an empty pool');
    this.pool = d.pool;
    this.used = d.pool.length;
    this.dead = d.dead;
    // At least the initial size: growth doubles it.
    this.offsets = d.offsets.length >= 1024 ? d.offsets : new Uint32Array(1024).fill(NONE);
    if (d.offsets.length < 1024) this.offsets.set(d.offsets);
    for (const o of d.offsets) if (o !== NONE && o >= this.used) throw new Error('document terms dump: an offset lies outside its pool');
  }
}

/** DocTerms as flat arrays (dump/load). */
export interface DocTermsDump {
  /** The used bytes of the pool. */
  pool: Uint8Array<ArrayBuffer>;
  /** Per document: where its entry starts in `pool`, 0xffffffff when it has none. */
  offsets: Uint32Array<ArrayBuffer>;
  /** Bytes of removed documents' entries still in `pool`. */
  dead: number;
}
