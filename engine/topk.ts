// Bounded top-k selection: a min-heap of the k best (score desc, id asc) seen so far, O(n log k).

export interface Scored {
  doc: number;
  score: number;
}

/** True when a ranks strictly before b: higher score, then lower doc id. */
export function ranksBefore(aScore: number, aDoc: number, bScore: number, bDoc: number): boolean {
  return aScore > bScore || (aScore === bScore && aDoc < bDoc);
}

export class TopK {
  private readonly docs: Int32Array;
  private readonly scores: Float64Array;
  private size = 0;

  constructor(readonly k: number) {
    this.docs = new Int32Array(Math.max(1, k));
    this.scores = new Float64Array(Math.max(1, k));
  }

  get length(): number {
    return this.size;
  }

  /** The score a candidate must beat to enter, or -Infinity while the heap is not full. */
  threshold(): number {
    return this.size < this.k ? -Infinity : this.scores[0]!;
  }

  push(doc: number, score: number): void {
    if (this.k === 0) return;
    if (this.size < this.k) {
      let i = this.size++;
      // Sift up: the root holds the worst of the kept entries.
      while (i > 0) {
        const parent = (i - 1) >> 1;
        if (!ranksBefore(this.scores[parent]!, this.docs[parent]!, score, doc)) break;
        this.docs[i] = this.docs[parent]!;
        this.scores[i] = this.scores[parent]!;
        i = parent;
      }
      this.docs[i] = doc;
      this.scores[i] = score;
      return;
    }
    if (!ranksBefore(score, doc, this.scores[0]!, this.docs[0]!)) return;
    this.siftDown(doc, score);
  }

  private siftDown(doc: number, score: number): void {
    let i = 0;
    const n = this.size;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      // Pick the worse child (the one that ranks after the other).
      let c = l;
      if (r < n && ranksBefore(this.scores[l]!, this.docs[l]!, this.scores[r]!, this.docs[r]!)) c = r;
      if (!ranksBefore(score, doc, this.scores[c]!, this.docs[c]!)) break;
      this.docs[i] = this.docs[c]!;
      this.scores[i] = this.scores[c]!;
      i = c;
    }
    this.docs[i] = doc;
    this.scores[i] = score;
  }

  /** Entries best first. */
  sorted(): Scored[] {
    const out: Scored[] = [];
    for (let i = 0; i < this.size; i++) out.push({ doc: this.docs[i]!, score: this.scores[i]! });
    out.sort((a, b) => (ranksBefore(a.score, a.doc, b.score, b.doc) ? -1 : 1));
    return out;
  }
}
