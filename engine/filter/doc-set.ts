// A set of document numbers as a metadata filter leaves it: a sorted list (Uint32Array) when it
// holds few of the knowledge base's documents, a bitset (32 documents a word) when it holds many.
// A list costs what it holds, a bitset 1/32 of a word per document of the whole space; evaluation
// (expression.ts) picks one by the postings' sizes, and the searches read either: full-text
// leapfrogs a list through its postings or tests bits, semantic scores a small list exactly.

export class DocSet {
  /** Held as a sorted list (else as a bitset; either may be made from the other, once, on demand). */
  readonly isList: boolean;

  private constructor(
    /** Every document is below this. */
    readonly space: number,
    private sorted: Uint32Array | undefined,
    private words: Uint32Array | undefined,
    /** -1 until counted (a bitset built by word operations). */
    private count: number,
  ) {
    this.isList = sorted !== undefined;
  }

  /** `docs` ascending, without repeats, each below `space` (taken, not copied). */
  static ofList(docs: Uint32Array, space: number): DocSet {
    return new DocSet(space, docs, undefined, docs.length);
  }

  /** `words`: bit d of the set is bit (d & 31) of word d >>> 5; none at or past `space` (taken, not copied). */
  static ofBits(words: Uint32Array, space: number, count = -1): DocSet {
    return new DocSet(space, undefined, words, count);
  }

  /** The documents d with mask[d] === 1. */
  static ofMask(mask: Uint8Array): DocSet {
    const words = wordsFor(mask.length);
    for (let d = 0; d < mask.length; d++) if (mask[d] === 1) words[d >>> 5]! |= 1 << (d & 31);
    return DocSet.ofBits(words, mask.length);
  }

  static empty(space: number): DocSet {
    return DocSet.ofList(new Uint32Array(0), space);
  }

  get size(): number {
    if (this.count < 0) this.count = popcount(this.words!);
    return this.count;
  }

  has(doc: number): boolean {
    const words = this.words;
    if (words) return (((words[doc >>> 5] ?? 0) >>> (doc & 31)) & 1) === 1;
    const docs = this.sorted!;
    const at = lowerBound(docs, 0, docs.length, doc);
    return at < docs.length && docs[at] === doc;
  }

  /** The documents ascending (a bitset's made once, in time of the space / 32 plus the size). */
  list(): Uint32Array {
    if (!this.sorted) this.sorted = listOfBits(this.words!, this.size);
    return this.sorted;
  }

  /** The bitset (a list's made once: space / 32 words). */
  bits(): Uint32Array {
    if (!this.words) {
      const words = wordsFor(this.space);
      for (const d of this.sorted!) words[d >>> 5]! |= 1 << (d & 31);
      this.words = words;
    }
    return this.words;
  }
}

/** A zeroed bitset for documents below `space`. */
export function wordsFor(space: number): Uint32Array {
  return new Uint32Array((space + 31) >>> 5);
}

export function popcount(words: Uint32Array): number {
  let n = 0;
  for (let i = 0; i < words.length; i++) {
    let w = words[i]!;
    if (w === 0) continue;
    w -= (w >>> 1) & 0x55555555;
    w = (w & 0x33333333) + ((w >>> 2) & 0x33333333);
    n += Math.imul((w + (w >>> 4)) & 0x0f0f0f0f, 0x01010101) >>> 24;
  }
  return n;
}

/** The set bits' documents, ascending (`count` of them). */
function listOfBits(words: Uint32Array, count: number): Uint32Array {
  const out = new Uint32Array(count);
  let n = 0;
  for (let i = 0; i < words.length; i++) {
    let w = words[i]!;
    while (w !== 0) {
      const low = w & -w;
      out[n++] = (i << 5) | (31 - Math.clz32(low));
      w ^= low;
    }
  }
  return out;
}

/** The first position in docs[from, to) holding a document ≥ doc (to when none). */
export function lowerBound(docs: Uint32Array, from: number, to: number, doc: number): number {
  let lo = from;
  let hi = to;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (docs[mid]! < doc) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** lowerBound from `from` on, galloping first (cheap when the answer is near). */
export function gallop(docs: Uint32Array, from: number, doc: number): number {
  const n = docs.length;
  if (from >= n || docs[from]! >= doc) return from;
  let step = 1;
  let lo = from;
  let hi = from + 1;
  while (hi < n && docs[hi]! < doc) {
    lo = hi;
    step *= 2;
    hi = lo + step;
  }
  return lowerBound(docs, lo + 1, Math.min(hi, n), doc);
}

// --- set operations (each result fresh or the first argument's storage, reused) ----------------------

/** a ∩ b of two lists: a merge, or galloping through the longer when the lengths differ much. */
export function intersectLists(a: Uint32Array, b: Uint32Array): Uint32Array {
  if (a.length > b.length) [a, b] = [b, a];
  const out = new Uint32Array(a.length);
  let n = 0;
  if (a.length * 8 < b.length) {
    let j = 0;
    for (let i = 0; i < a.length && j < b.length; i++) {
      j = gallop(b, j, a[i]!);
      if (b[j] === a[i]) out[n++] = a[i]!;
    }
  } else {
    let i = 0;
    let j = 0;
    while (i < a.length && j < b.length) {
      const x = a[i]!;
      const y = b[j]!;
      if (x < y) i++;
      else if (x > y) j++;
      else {
        out[n++] = x;
        i++;
        j++;
      }
    }
  }
  return n === out.length ? out : out.slice(0, n);
}

/** a ∪ b of two lists, merged. */
export function unionLists(a: Uint32Array, b: Uint32Array): Uint32Array {
  const out = new Uint32Array(a.length + b.length);
  let i = 0;
  let j = 0;
  let n = 0;
  while (i < a.length && j < b.length) {
    const x = a[i]!;
    const y = b[j]!;
    if (x < y) {
      out[n++] = x;
      i++;
    } else if (x > y) {
      out[n++] = y;
      j++;
    } else {
      out[n++] = x;
      i++;
      j++;
    }
  }
  while (i < a.length) out[n++] = a[i++]!;
  while (j < b.length) out[n++] = b[j++]!;
  return n === out.length ? out : out.slice(0, n);
}

/** The documents of `list` for which `keep` holds, in place. */
export function filterList(list: Uint32Array, keep: (doc: number) => boolean): Uint32Array {
  let n = 0;
  for (let i = 0; i < list.length; i++) if (keep(list[i]!)) list[n++] = list[i]!;
  return n === list.length ? list : list.subarray(0, n);
}

/** The documents of `list` whose bit is set (`inside`) or clear (not `inside`) in `words`, in place. */
export function filterByBits(list: Uint32Array, words: Uint32Array, inside: boolean): Uint32Array {
  const want = inside ? 1 : 0;
  let n = 0;
  for (let i = 0; i < list.length; i++) {
    const d = list[i]!;
    if ((((words[d >>> 5] ?? 0) >>> (d & 31)) & 1) === want) list[n++] = d;
  }
  return n === list.length ? list : list.subarray(0, n);
}

/** a \ b of two lists. */
export function subtractLists(a: Uint32Array, b: Uint32Array): Uint32Array {
  let n = 0;
  let j = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    j = gallop(b, j, x);
    if (j >= b.length || b[j] !== x) a[n++] = x;
  }
  return n === a.length ? a : a.subarray(0, n);
}

/** Set the bits of `list` in `words`. */
export function setBits(words: Uint32Array, list: Uint32Array): void {
  for (let i = 0; i < list.length; i++) {
    const d = list[i]!;
    words[d >>> 5]! |= 1 << (d & 31);
  }
}

/** Clear the bits of `list` in `words`. */
export function clearBits(words: Uint32Array, list: Uint32Array): void {
  for (let i = 0; i < list.length; i++) {
    const d = list[i]!;
    if (d >>> 5 < words.length) words[d >>> 5]! &= ~(1 << (d & 31));
  }
}

/** a &= b (word by word; a's words past b's end cleared). */
export function andBits(a: Uint32Array, b: Uint32Array): void {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) a[i]! &= b[i]!;
  if (a.length > n) a.fill(0, n);
}

/** a |= b. */
export function orBits(a: Uint32Array, b: Uint32Array): void {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) a[i]! |= b[i]!;
}

/** a &= ~b. */
export function andNotBits(a: Uint32Array, b: Uint32Array): void {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) a[i]! &= ~b[i]!;
}
