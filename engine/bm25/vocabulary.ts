// The index's terms in sorted order, for finding the terms near a query word: those within a
// few typos (Damerau–Levenshtein: a missing, extra, wrong or swapped character is one typo) and
// those a prefix begins. Terms are only ever added to an index, so the sorted list is rebuilt
// lazily: terms added since the last sort sit in a short unsorted tail that every lookup scans,
// and the list is sorted anew once the tail grows past an eighth of it.
//
// The typo search walks the sorted terms as a trie (Lucene's and Meilisearch's Levenshtein
// automata over a term dictionary do the same work): one dynamic-programming row per character,
// rows shared with the previous term's common prefix, and every term beginning with a prefix
// skipped at once when none of them can be near enough. The sorted terms are packed into one
// character array: the walk reads memory in order instead of chasing a string object per term
// (that chasing was most of its time).

/** A term near a query word and how far it is from it. */
export interface NearTerm {
  term: string;
  typos: number;
}

const MIN_TAIL = 1024;
/** Words whose near terms are remembered, at most. */
const MEMO_LIMIT = 4096;
/** The analyzer's longest term. */
const MAX_TERM = 64;

/** Terms packed end to end: term i is chars[start[i], start[i + 1]). */
class PackedTerms {
  readonly chars: Uint16Array;
  readonly start: Uint32Array;

  constructor(private readonly strings: readonly string[]) {
    let total = 0;
    for (const t of strings) total += t.length;
    this.chars = new Uint16Array(total);
    this.start = new Uint32Array(strings.length + 1);
    let at = 0;
    strings.forEach((t, i) => {
      this.start[i] = at;
      for (let k = 0; k < t.length; k++) this.chars[at++] = t.charCodeAt(k);
    });
    this.start[strings.length] = at;
  }

  get count(): number {
    return this.start.length - 1;
  }

  length(i: number): number {
    return this.start[i + 1]! - this.start[i]!;
  }

  term(i: number): string {
    return this.strings[i]!;
  }

  /** Whether term i begins with the first `n` characters of term j. */
  sharesPrefix(i: number, j: number, n: number): boolean {
    if (this.length(i) < n) return false;
    const a = this.start[i]!;
    const b = this.start[j]!;
    for (let k = 0; k < n; k++) if (this.chars[a + k] !== this.chars[b + k]) return false;
    return true;
  }

  /**
   * The first term after i in (i, hi) that does not begin with term i's first `n` characters
   * (the ones that do follow i): galloping, as such runs are mostly short.
   */
  pastRunOf(i: number, n: number, hi: number): number {
    let shares = i;
    let probe = i + 1;
    for (let step = 1; probe < hi && this.sharesPrefix(probe, i, n); step *= 2) {
      shares = probe;
      probe += step;
    }
    let from = shares + 1;
    let to = Math.min(probe, hi);
    while (from < to) {
      const mid = (from + to) >>> 1;
      if (this.sharesPrefix(mid, i, n)) from = mid + 1;
      else to = mid;
    }
    return from;
  }

  /** Compare term i with `key`: negative, 0 or positive as string comparison orders them. */
  compare(i: number, key: string): number {
    const a = this.start[i]!;
    const n = this.length(i);
    const m = Math.min(n, key.length);
    for (let k = 0; k < m; k++) {
      const d = this.chars[a + k]! - key.charCodeAt(k);
      if (d !== 0) return d;
    }
    return n - key.length;
  }

  /** The first term in [lo, hi) not below `key`. */
  lowerBound(key: string, lo = 0, hi = this.count): number {
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.compare(mid, key) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** The first term in [lo, hi) that does not begin with `prefix` (the ones that do come first). */
  pastPrefix(prefix: string, lo: number, hi: number): number {
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.startsWith(mid, prefix)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  startsWith(i: number, prefix: string): boolean {
    if (this.length(i) < prefix.length) return false;
    const a = this.start[i]!;
    for (let k = 0; k < prefix.length; k++) if (this.chars[a + k] !== prefix.charCodeAt(k)) return false;
    return true;
  }
}

/**
 * Damerau–Levenshtein distance (optimal string alignment) of `word` against packed terms,
 * reporting those at most `budget` away. Row d of the table belongs to the d-th character of the
 * term walked last; a term reuses the rows of the prefix it shares with it.
 */
class TypoWalk {
  private readonly table: Int32Array;
  private readonly rowMin = new Int32Array(MAX_TERM + 1);
  private readonly stride: number;
  private readonly word: Int32Array;
  /** Rows 1..valid are right for the first `valid` characters of term `last` of `terms`. */
  private valid = 0;
  private last = -1;
  private terms: PackedTerms | undefined;

  constructor(
    word: string,
    private readonly budget: number,
  ) {
    const m = word.length;
    this.word = new Int32Array(m);
    for (let j = 0; j < m; j++) this.word[j] = word.charCodeAt(j);
    this.stride = m + 1;
    this.table = new Int32Array((MAX_TERM + 1) * this.stride);
    for (let j = 0; j < this.stride; j++) this.table[j] = j;
  }

  /**
   * Row `d` (1-based) for the term starting at chars[at], from rows d−1 and d−2. Only the band
   * |j − d| ≤ budget is computed (Ukkonen): a cell outside it is past the budget, and the cells
   * bordering the band hold budget + 1 for the next row to read.
   */
  private row(chars: Uint16Array, at: number, d: number): void {
    const { table, word, stride, budget } = this;
    const m = stride - 1;
    const prev = (d - 1) * stride;
    const row = d * stride;
    const c = chars[at + d - 1]!;
    const before = d > 1 ? chars[at + d - 2]! : -1;
    const over = budget + 1;
    const from = Math.max(1, d - budget);
    const to = Math.min(m, d + budget);
    table[row] = d;
    if (from > to) {
      this.rowMin[d] = over;
      return;
    }
    if (from > 1) table[row + from - 1] = over;
    if (to < m) table[row + to + 1] = over;
    let min = from > 1 ? over : d;
    for (let j = from; j <= to; j++) {
      const wc = word[j - 1]!;
      let v = table[prev + j - 1]! + (wc === c ? 0 : 1);
      const del = table[prev + j]! + 1;
      if (del < v) v = del;
      const ins = table[row + j - 1]! + 1;
      if (ins < v) v = ins;
      // A swap of two neighbouring characters is one typo.
      if (j > 1 && wc === before && word[j - 2] === c) {
        const swap = table[prev - stride + j - 2]! + 1;
        if (swap < v) v = swap;
      }
      table[row + j] = v;
      if (v < min) min = v;
    }
    this.rowMin[d] = min;
  }

  /** The terms of `terms[lo, hi)` (sorted, for the skips to be right) within the budget. */
  walk(terms: PackedTerms, lo: number, hi: number, out: (term: number, typos: number) => void): void {
    if (this.terms !== terms) {
      this.terms = terms;
      this.valid = 0;
    }
    const { chars, start } = terms;
    const m = this.stride - 1;
    let i = lo;
    while (i < hi) {
      const at = start[i]!;
      const n = start[i + 1]! - at;
      // Rows of the prefix shared with the last term are still right.
      let d = 0;
      if (this.last >= 0) {
        const shared = Math.min(this.valid, n);
        const prevAt = start[this.last]!;
        while (d < shared && chars[at + d] === chars[prevAt + d]) d++;
      }
      let dead = 0;
      for (d = d + 1; d <= n; d++) {
        this.row(chars, at, d);
        // No longer term can come back within budget (a swap reaches back one row more).
        if (this.rowMin[d]! > this.budget && this.rowMin[d - 1]! >= this.budget) {
          dead = d;
          break;
        }
      }
      this.last = i;
      if (dead > 0) {
        this.valid = dead - 1;
        // Skip every term that begins with the dead prefix.
        i = terms.pastRunOf(i, dead, hi);
        continue;
      }
      this.valid = n;
      // Lengths further apart than the budget never meet it (and the band left that cell out).
      const distance = Math.abs(n - m) <= this.budget ? this.table[n * this.stride + m]! : Infinity;
      if (distance <= this.budget) out(i, distance);
      i++;
    }
  }
}

export class Vocabulary {
  private sorted = new PackedTerms([]);
  private sortedList: string[] = [];
  /** Terms 0..covered−1 of the index are in `sorted`; later ones are the tail. */
  private covered = 0;
  private tailTerms = new PackedTerms([]);
  private tailUpTo = 0;

  constructor(
    /** The index's terms by id: ids only ever grow. */
    private readonly termCount: () => number,
    private readonly termAt: (id: number) => string,
  ) {}

  /** The terms added since the last sort (sorting first when there are too many). */
  private tail(): PackedTerms {
    const n = this.termCount();
    if (n - this.covered > Math.max(MIN_TAIL, this.sortedList.length >>> 3)) {
      for (let id = this.covered; id < n; id++) this.sortedList.push(this.termAt(id));
      this.sortedList.sort();
      this.sorted = new PackedTerms(this.sortedList);
      this.covered = n;
    }
    if (this.tailUpTo !== n) {
      const tail: string[] = [];
      for (let id = this.covered; id < n; id++) tail.push(this.termAt(id));
      // Sorted too: the walk's skips rely on it.
      this.tailTerms = new PackedTerms(tail.sort());
      this.tailUpTo = n;
    }
    return this.tailTerms;
  }

  /**
   * Terms within `maxTypos` of `word`, the word itself excluded. A typo on the first character
   * counts as two (Meilisearch's rule: fewer false friends, and the walk stays within one letter).
   */
  near(word: string, maxTypos: number): readonly NearTerm[] {
    if (maxTypos <= 0 || word.length === 0) return [];
    const tail = this.tail();
    // Queries repeat their words (search as you type sends them again and again): remembered
    // while no term was added.
    if (this.memoFor !== this.termCount() || this.memo.size >= MEMO_LIMIT) {
      this.memo.clear();
      this.memoFor = this.termCount();
    }
    const key = `${maxTypos}\u0000${word}`;
    let found = this.memo.get(key);
    if (!found) {
      found = this.walkNear(word, maxTypos, tail);
      this.memo.set(key, found);
    }
    return found;
  }

  private memo = new Map<string, NearTerm[]>();
  private memoFor = -1;

  private walkNear(word: string, maxTypos: number, tail: PackedTerms): NearTerm[] {
    const found: NearTerm[] = [];
    const first = word[0]!;
    for (const terms of [this.sorted, tail]) {
      const keep = (extra: number) => (i: number, typos: number) => {
        const term = terms.term(i);
        if (term !== word) found.push({ term, typos: typos + extra });
      };
      // Terms that begin with the word's first character: the whole budget.
      const lo = terms.lowerBound(first);
      const hi = terms.pastPrefix(first, lo, terms.count);
      new TypoWalk(word, maxTypos).walk(terms, lo, hi, keep(0));
      // The others: their first character costs one typo more.
      if (maxTypos >= 2) {
        const other = new TypoWalk(word, maxTypos - 1);
        other.walk(terms, 0, lo, keep(1));
        other.walk(terms, hi, terms.count, keep(1));
      }
    }
    return found;
  }

  /** Terms that begin with `prefix`, the prefix itself excluded. */
  startingWith(prefix: string): string[] {
    const out: string[] = [];
    const tail = this.tail();
    for (const terms of [this.sorted, tail]) {
      const lo = terms.lowerBound(prefix);
      const hi = terms.pastPrefix(prefix, lo, terms.count);
      for (let i = lo; i < hi; i++) if (terms.length(i) !== prefix.length) out.push(terms.term(i));
    }
    return out;
  }
}
