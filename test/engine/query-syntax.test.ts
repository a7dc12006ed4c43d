// Query syntax (engine/search/query-syntax.ts): phrases, exclusions, and what they mean for a chunk.
import { expect, test } from 'bun:test';
import { parseQuery, satisfies } from '../../engine/search/query-syntax';

test('words, "phrases" and -exclusions are told apart; the phrases rank too; the model reads the words', () => {
  const q = parseQuery('refund "money back" -"gift card" -voucher e-mail');
  expect(q.terms).toEqual(['refund', 'monei', 'back', 'e', 'mail']);
  expect(q.phrases).toEqual([['monei', 'back']]);
  expect(q.excluded).toEqual([['gift', 'card'], ['voucher']]);
  expect(q.semanticText).toBe('refund money back e-mail');
  // A lone hyphen, an unterminated quote: words and a phrase to the end.
  expect(parseQuery('a - b').terms).toEqual(['b']);
  expect(parseQuery('?!... --- -2 -- b').excluded).toEqual([]);
  expect(parseQuery('"money back').phrases).toEqual([['monei', 'back']]);
  // A one-word phrase is a word.
  expect(parseQuery('"refund"')).toMatchObject({ terms: ['refund'], phrases: [] });
});

test('a phrase matches its terms in a row, stems and stop words as the index sees them', () => {
  const q = parseQuery('"refund requests"');
  expect(satisfies(q, 'All refunds requested by mail are answered.')).toBe(true);
  expect(satisfies(q, 'Requests for a refund are answered.')).toBe(false);
  // Stop words between the words are not indexed, so they do not break the phrase; any other word does.
  expect(satisfies(parseQuery('"money back"'), 'your money is back')).toBe(true);
  expect(satisfies(parseQuery('"money back"'), 'money came back')).toBe(false);
});

test('an exclusion leaves out chunks holding the word (any form) or the phrase', () => {
  expect(satisfies(parseQuery('refund -voucher'), 'A refund or vouchers.')).toBe(false);
  expect(satisfies(parseQuery('refund -voucher'), 'A refund.')).toBe(true);
  expect(satisfies(parseQuery('card -"gift card"'), 'A gift card.')).toBe(false);
  expect(satisfies(parseQuery('card -"gift card"'), 'A gift for the card.')).toBe(false); // "for", "the": stop words
  expect(satisfies(parseQuery('card -"gift card"'), 'A card as a gift.')).toBe(true);
});

test('syntax that cannot mean anything is refused with a reason', () => {
  expect(() => parseQuery('-refund')).toThrow('a query of exclusions only has nothing to rank by');
  expect(() => parseQuery('"to be or not"')).toThrow('holds only stop words');
  expect(() => parseQuery('refund -the')).toThrow('excludes only stop words');
});
