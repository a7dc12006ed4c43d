// Martin Porter's original (1980) stemming algorithm, as his reference C and Java implementations
// and Lucene's PorterStemFilter (the last step of Lucene's EnglishAnalyzer) apply it, including
// their departures from the paper ("bli" → "ble", "logi" → "log"). Words of one or two letters
// are left alone. Input is one lowercased token; anything that is not a-z counts as a consonant,
// as in the reference code.

const isVowelLetter = (c: string) => c === 'a' || c === 'e' || c === 'i' || c === 'o' || c === 'u';

/** Is w[i] a consonant? `y` is one at the start or after a vowel. */
function cons(w: string, i: number): boolean {
  const c = w[i]!;
  if (isVowelLetter(c)) return false;
  if (c === 'y') return i === 0 ? true : !cons(w, i - 1);
  return true;
}

/** m(): the number of vowel–consonant sequences in w[0..j]. */
function measure(w: string, j: number): number {
  let n = 0;
  let i = 0;
  for (;;) {
    if (i > j) return n;
    if (!cons(w, i)) break;
    i++;
  }
  i++;
  for (;;) {
    for (;;) {
      if (i > j) return n;
      if (cons(w, i)) break;
      i++;
    }
    i++;
    n++;
    for (;;) {
      if (i > j) return n;
      if (!cons(w, i)) break;
      i++;
    }
    i++;
  }
}

function vowelInStem(w: string, j: number): boolean {
  for (let i = 0; i <= j; i++) if (!cons(w, i)) return true;
  return false;
}

/** w[j−1..j] is a double consonant. */
function doubleConsonant(w: string, j: number): boolean {
  return j >= 1 && w[j] === w[j - 1] && cons(w, j);
}

/** w[i−2..i] is consonant–vowel–consonant and w[i] is not w, x or y (cav(e), hop(e); not snow, box). */
function cvc(w: string, i: number): boolean {
  if (i < 2 || !cons(w, i) || cons(w, i - 1) || !cons(w, i - 2)) return false;
  const c = w[i];
  return !(c === 'w' || c === 'x' || c === 'y');
}

// Steps 2–4 (the reference code's step3–step5): the first listed suffix the word ends with is the
// one tried (the reference switches on a letter and tests its suffixes in this order; suffixes under
// different letters never both match), and is replaced when the stem before it has m() > 0.
const STEP2: readonly (readonly [string, string])[] = [
  ['ational', 'ate'],
  ['tional', 'tion'],
  ['enci', 'ence'],
  ['anci', 'ance'],
  ['izer', 'ize'],
  ['bli', 'ble'],
  ['alli', 'al'],
  ['entli', 'ent'],
  ['eli', 'e'],
  ['ousli', 'ous'],
  ['ization', 'ize'],
  ['ation', 'ate'],
  ['ator', 'ate'],
  ['alism', 'al'],
  ['iveness', 'ive'],
  ['fulness', 'ful'],
  ['ousness', 'ous'],
  ['aliti', 'al'],
  ['iviti', 'ive'],
  ['biliti', 'ble'],
  ['logi', 'log'],
];
const STEP3: readonly (readonly [string, string])[] = [
  ['icate', 'ic'],
  ['ative', ''],
  ['alize', 'al'],
  ['iciti', 'ic'],
  ['ical', 'ic'],
  ['ful', ''],
  ['ness', ''],
];
// Step 4 removes the suffix when the stem before it has m() > 1; `ion` only after s or t.
const STEP4: readonly string[] = [
  'al',
  'ance',
  'ence',
  'er',
  'ic',
  'able',
  'ible',
  'ant',
  'ement',
  'ment',
  'ent',
  'ion',
  'ou',
  'ism',
  'ate',
  'iti',
  'ous',
  'ive',
  'ize',
];

function replaceFirst(w: string, rules: readonly (readonly [string, string])[]): string {
  for (const [suffix, replacement] of rules) {
    if (!w.endsWith(suffix)) continue;
    const j = w.length - suffix.length - 1;
    return measure(w, j) > 0 ? w.slice(0, j + 1) + replacement : w;
  }
  return w;
}

export function porterStem(word: string): string {
  if (word.length <= 2) return word;
  let w = word;

  // Step 1a: plurals.
  if (w.endsWith('s')) {
    if (w.endsWith('sses')) w = w.slice(0, -2);
    else if (w.endsWith('ies')) w = w.slice(0, -2);
    else if (w[w.length - 2] !== 's') w = w.slice(0, -1);
  }
  // Step 1b: -eed, -ed, -ing.
  if (w.endsWith('eed')) {
    if (measure(w, w.length - 4) > 0) w = w.slice(0, -1);
  } else {
    const suffix = w.endsWith('ed') ? 2 : w.endsWith('ing') ? 3 : 0;
    if (suffix > 0 && vowelInStem(w, w.length - suffix - 1)) {
      w = w.slice(0, -suffix);
      const k = w.length - 1;
      if (w.endsWith('at') || w.endsWith('bl') || w.endsWith('iz')) w += 'e';
      else if (doubleConsonant(w, k)) {
        const c = w[k];
        if (c !== 'l' && c !== 's' && c !== 'z') w = w.slice(0, -1);
      } else if (measure(w, k) === 1 && cvc(w, k)) w += 'e';
    }
  }
  // Step 1c: a final y after a vowel in the stem becomes i.
  if (w.endsWith('y') && vowelInStem(w, w.length - 2)) w = `${w.slice(0, -1)}i`;
  // Steps 2 and 3: double suffixes to single ones; -ic-, -full, -ness.
  w = replaceFirst(w, STEP2);
  w = replaceFirst(w, STEP3);
  // Step 4: -ant, -ence, … in context <c>vcvc<v>.
  for (const suffix of STEP4) {
    if (!w.endsWith(suffix)) continue;
    const j = w.length - suffix.length - 1;
    if (suffix === 'ion' && !(j >= 0 && (w[j] === 's' || w[j] === 't'))) break;
    if (measure(w, j) > 1) w = w.slice(0, j + 1);
    break;
  }
  // Step 5: a final -e where m() > 1 (or m() = 1 and not *o), then -ll → -l where m() > 1.
  if (w.endsWith('e')) {
    const m = measure(w, w.length - 2);
    if (m > 1 || (m === 1 && !cvc(w, w.length - 2))) w = w.slice(0, -1);
  }
  if (w.endsWith('ll') && measure(w, w.length - 1) > 1) w = w.slice(0, -1);
  return w;
}
