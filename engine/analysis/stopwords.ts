// Lucene's classic English stop set (33 words). A short list keeps phrases such as "not" and
// "between" out of the way only when they carry no meaning; SciFact measurements favoured it over
// wink's longer list (bench/fulltext.ts --sweep).
export const ENGLISH_STOP_WORDS: ReadonlySet<string> = new Set([
  'a', 'an', 'and', 'are', 'as', 'at', 'be', 'but', 'by', 'for', 'if', 'in', 'into', 'is', 'it',
  'no', 'not', 'of', 'on', 'or', 'such', 'that', 'the', 'their', 'then', 'there', 'these', 'they',
  'this', 'to', 'was', 'will', 'with',
]);
