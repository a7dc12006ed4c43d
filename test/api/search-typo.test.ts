// Typo tolerance and search as you type over real HTTP: on by default in full-text and hybrid,
// Meilisearch's word-length rule (on the word as typed, matched by its stem: "hoyses" finds
// "houses"), exact matches ranked above typo matches with scores falling as ranks do, the last
// word as a prefix while it is being typed, highlights of typo matches, and `typoTolerance: false`.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { addContent, createKb, InProcessServer } from '../helpers/server';
import { API, expectSearchAnswer } from './util';

let server: InProcessServer;
let kb: string;
const ids: Record<string, string> = {};

type Mode = 'full-text' | 'hybrid' | 'semantic';

async function search(mode: Mode, body: Record<string, unknown>): Promise<any[]> {
  const res = await server.api('POST', `${API}/knowledge-bases/${kb}/search/${mode}`, body);
  expect({ status: res.status, body: res.body }).toMatchObject({ status: 200, body: { success: true } });
  expectSearchAnswer(res.body, mode);
  return res.body.data;
}

const contents = (hits: { contentId: string }[]) => hits.map((h) => h.contentId);

beforeAll(async () => {
  server = await InProcessServer.start();
  kb = await createKb(server, 'Typos');
  for (const [name, text] of Object.entries({
    refund: 'Refund requests are handled by the billing team within fourteen days.',
    policy: 'Our refund policy covers damaged goods only.',
    payment: 'Payment is due at the end of the month.',
    // The same word misspelled, three times in a short chunk: its own BM25 is the highest of all.
    misspelt: 'Paymnet paymnet paymnet.',
    police: 'The police report must be attached to the claim.',
    numbers: 'Order 12345 shipped on Monday.',
    unrelated: 'The office dog greets visitors at the door.',
    houses: 'The houses on our street were painted blue.',
  })) {
    ids[name] = await addContent(server, kb, text);
  }
}, 120_000);

afterAll(async () => {
  await server?.stop();
  server?.cleanup();
});

for (const mode of ['full-text', 'hybrid'] as const) {
  // Hybrid at a low semantic weight: the full-text leg decides, the semantic one must not hide it.
  const body = (query: string, extra: Record<string, unknown> = {}) => (mode === 'hybrid' ? { query, semanticWeight: 0.2, ...extra } : { query, ...extra });

  describe(`${mode}`, () => {
    test('a word with a typo finds the word; off, it finds nothing by keywords', async () => {
      const on = await search(mode, body('refnud'));
      expect(contents(on).slice(0, 2).sort()).toEqual([ids.refund!, ids.policy!].sort());
      if (mode === 'full-text') expect(await search(mode, body('refnud', { typoTolerance: false }))).toEqual([]);
      else for (const h of await search(mode, body('refnud', { typoTolerance: false }))) expect(h.fullTextScore).toBe(0);
      // Swapped letters are one typo; "refnud" and "rfeund" both: the latter's first letter is right.
      expect(
        contents(await search(mode, body('rfeund')))
          .slice(0, 2)
          .sort(),
      ).toEqual([ids.refund!, ids.policy!].sort());
    });

    test('exact matches rank above typo matches, scores falling with the ranks', async () => {
      const hits = await search(mode, body('payment '));
      const ranked = contents(hits);
      expect(ranked[0]).toBe(ids.payment);
      expect(ranked).toContain(ids.misspelt);
      for (let i = 1; i < hits.length; i++) expect(hits[i].score).toBeLessThanOrEqual(hits[i - 1].score);
      if (mode === 'full-text') {
        expect(ranked).toEqual([ids.payment!, ids.misspelt!]);
        // Searching the misspelling itself: it is the exact match now.
        expect(contents(await search(mode, body('paymnet ')))).toEqual([ids.misspelt!, ids.payment!]);
      }
    });

    test("short words and numbers match exactly (Meilisearch's rule: 1 typo from 5 characters)", async () => {
      // "dgo" is 3 characters: no typo allowed, so "dog" is not found by keywords.
      const dog = await search(mode, body('dgo '));
      if (mode === 'full-text') expect(dog).toEqual([]);
      else for (const h of dog) expect(h.fullTextScore).toBe(0);
      const order = await search(mode, body('12346 '));
      if (mode === 'full-text') expect(order).toEqual([]);
      else for (const h of order) expect(h.fullTextScore).toBe(0);
    });

    test('an inflected word with a typo: allowed by its length as typed, matched by its stem', async () => {
      // "hoyses" has 6 characters (one typo); its stem "hoys" is one typo from "hous", the stem of "houses".
      for (const query of ['hoyses ', 'hosues ', 'Hoyses']) {
        const hits = await search(mode, body(query));
        expect({ query, first: hits[0]?.contentId }).toEqual({ query, first: ids.houses });
        if (mode === 'full-text') expect(contents(hits)).toEqual([ids.houses!]);
      }
      const [hit] = await search(mode, body('hoyses ', { highlight: true }));
      expect(hit.highlights.map((h: { start: number; end: number }) => hit.contentChunk.slice(h.start, h.end))).toEqual(['houses']);
      const off = await search(mode, body('hoyses ', { typoTolerance: false }));
      if (mode === 'full-text') expect(off).toEqual([]);
      else for (const h of off) expect(h.fullTextScore).toBe(0);
      // A typo that keeps the stemmer from taking the suffix off: "paintnig" stays whole, far from "paint".
      const far = await search(mode, body('paintnig '));
      if (mode === 'full-text') expect(far).toEqual([]);
      else for (const h of far) expect(h.fullTextScore).toBe(0);
    });

    test('the last word matches as a prefix while it is being typed', async () => {
      const typing = contents(await search(mode, body('refund pol')));
      expect(typing[0]).toBe(ids.policy);
      // "pol" also begins "police": found after the chunks holding "refund".
      if (mode === 'full-text') expect(typing).toEqual([ids.policy!, ids.refund!, ids.police!]);
      // A space after the word: it is finished, no completions.
      const finished = await search(mode, body('pol '));
      if (mode === 'full-text') expect(finished).toEqual([]);
      const exact = await search(mode, body('refund pol', { typoTolerance: false }));
      if (mode === 'full-text') expect(contents(exact)).not.toContain(ids.police);
      else expect(exact.find((h) => h.contentId === ids.police).fullTextScore).toBe(0);
    });

    test('highlights mark the words matched through a typo', async () => {
      const [hit] = await search(mode, body('refnud', { highlight: true }));
      const marked = hit.highlights.map((h: { start: number; end: number }) => hit.contentChunk.slice(h.start, h.end).toLowerCase());
      expect(marked).toContain('refund');
    });
  });
}

test('hybrid at weight 0 ranks exactly as full-text with typos (the same leg)', async () => {
  for (const query of ['refnud', 'payment ', 'refund pol']) {
    const ft = await search('full-text', { query, limit: 20 });
    const hy = await search('hybrid', { query, limit: 20, semanticWeight: 0 });
    expect(hy.map((h) => h.id)).toEqual(ft.map((h) => h.id));
    expect(hy.map((h) => h.fullTextScore)).toEqual(ft.map((h) => h.score));
  }
});

test('semantic search takes the flag and reads the query as written either way', async () => {
  const a = await search('semantic', { query: 'refnud', limit: 3 });
  const b = await search('semantic', { query: 'refnud', limit: 3, typoTolerance: false });
  expect(b).toEqual(a);
});
