// The high-quality type with a real sentence-transformer, end to end over HTTP: the server runs as
// a child process (test/helpers/server.ts) with EMBEDDING_MODEL_DIR pointed at the shared model
// folder beside the checkout (../shared/models, always present in CI; never copied into the
// repository) and HIGH_QUALITY_MODEL=auto, which picks Xenova/all-MiniLM-L6-v2 there.
//
// 1. Semantic search finds a paraphrase that shares no index term with the query (checked with the
//    engine's own analyzer, not assumed), and full-text search does not find it.
// 2. Hybrid search at the default weight ranks first the document that matches both by words and by
//    meaning, above one that matches only by words and one that matches only by meaning, each of
//    which its own leg finds; in each case one leg alone ranks another document first.
// 3. After a restart (once by replaying the log, once from the shutdown snapshot) every full-text,
//    semantic and hybrid answer is identical: ids, order and scores to the last bit.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { analyze } from '../engine/index';
import { addContent, createKb, InProcessServer } from './helpers/server';

const MODELS = resolve(import.meta.dir, '..', '..', 'shared', 'models');
const MODEL = 'Xenova/all-MiniLM-L6-v2';
const ENV = { EMBEDDING_MODEL_DIR: MODELS, HIGH_QUALITY_MODEL: 'auto', INGEST_WORKERS: '1' };
const API = '/api/v1/knowledge-bases';

type Mode = 'full-text' | 'semantic' | 'hybrid';
const MODES: Mode[] = ['full-text', 'semantic', 'hybrid'];

/** Index terms shared by two texts, as the full-text index sees them (stop words out, stemmed). */
function sharedTerms(a: string, b: string): string[] {
  const inB = new Set(analyze(b));
  return [...new Set(analyze(a))].filter((t) => inB.has(t));
}

// --- 1. paraphrases ------------------------------------------------------------------------------

/** Short documents on distinct topics. */
const TOPICS = {
  pressure: "The physician prescribed medication for the patient's high blood pressure.",
  concert: 'The orchestra rehearsed the symphony before the evening concert.',
  snow: 'Heavy snowfall closed the mountain pass for three days.',
  startup: 'The startup raised venture capital to expand its engineering team.',
  // Shares "gave" and "treat" with the first query, so full-text has something to find there.
  dog: 'The dog gave its paw for a treat.',
} as const;
type Topic = keyof typeof TOPICS;

/** Each query paraphrases its target and shares no index term with it. */
const PARAPHRASES: Array<{ query: string; target: Topic }> = [
  { query: 'doctor gave drugs to treat hypertension', target: 'pressure' },
  { query: 'musicians practiced the piece ahead of the night show', target: 'concert' },
  { query: 'a young company got investors to fund hiring more developers', target: 'startup' },
  { query: 'roads through the alps were blocked by a blizzard', target: 'snow' },
];

// --- 2. hybrid: words, meaning, both -------------------------------------------------------------

const HYBRID_QUERY = 'bank interest rates on loans';
/** Unrelated documents, so each leg's normalization has a floor that is not one of the three. */
const UNRELATED = {
  bread: 'Knead the dough and let the bread rise overnight.',
  tax: 'File your tax return before the April deadline.',
  pressure: TOPICS.pressure,
};

interface HybridCase {
  name: string;
  /** lexical: the query's words in another sense; semantic: a paraphrase with none of its words; both: its words and its meaning. */
  docs: { lexical: string; semantic: string; both: string };
  /** The leg that, alone, ranks another document above `both` (so the blend is what puts it first). */
  misleadingLeg: Mode;
}

const HYBRID_CASES: HybridCase[] = [
  {
    name: 'the semantic leg alone ranks the paraphrase first',
    docs: {
      lexical: 'Bank holiday: the river bank park closes early, so plan your picnic accordingly.',
      semantic: 'Lenders are charging borrowers more for mortgages and credit.',
      // The query's words and meaning, diluted by other news: a paraphrase beats it on meaning alone.
      both: 'Our bank branch renovated its lobby with new carpets, extended its opening hours to Saturdays, hired two tellers, and, as a footnote, adjusted loan interest rates.',
    },
    misleadingLeg: 'semantic',
  },
  {
    name: 'the full-text leg alone ranks the word-sharing document first',
    docs: {
      lexical: 'Interest in the river bank picnic rates high: loans of picnic blankets are free at the bank of the river.',
      semantic: 'Lenders charge borrowers more when central authorities tighten monetary policy.',
      both: 'The bank raised interest rates on loans this month, and also renovated its lobby with new carpets.',
    },
    misleadingLeg: 'full-text',
  },
];

// --- the server and its data ---------------------------------------------------------------------

let server: InProcessServer;
let dataDir: string;
let topicsKb: string;
/** content id → topic name, for readable failures. */
const topicOf = new Map<string, Topic>();
const idOf = {} as Record<Topic, string>;
const hybridKbs: Array<{ kb: string; ids: Record<keyof HybridCase['docs'], string>; names: Map<string, string> }> = [];

async function search(s: InProcessServer, kb: string, mode: Mode, query: string): Promise<any[]> {
  const res = await s.api('POST', `${API}/${kb}/search/${mode}`, { query });
  expect({ mode, query, status: res.status }).toEqual({ mode, query, status: 200 });
  return res.body.data;
}

beforeAll(async () => {
  expect(existsSync(join(MODELS, MODEL, 'onnx', 'model.onnx'))).toBe(true);
  // The first run never snapshots at shutdown, so the first restart replays the log.
  server = await InProcessServer.start({ env: { ...ENV, SNAPSHOT_ON_SHUTDOWN: 'false' } });
  dataDir = server.dataDir;

  // ?wait=true (decisions.md): each create answers once the item is indexed (addContent checks
  // that it is `ready`), so searches right after see it.
  topicsKb = await createKb(server, 'Topics', 'TEXT_HIGH_QUALITY');
  for (const [topic, text] of Object.entries(TOPICS) as Array<[Topic, string]>) {
    idOf[topic] = await addContent(server, topicsKb, text);
    topicOf.set(idOf[topic], topic);
  }
  for (const c of HYBRID_CASES) {
    const kb = await createKb(server, `Hybrid: ${c.name}`, 'TEXT_HIGH_QUALITY');
    const names = new Map<string, string>();
    for (const [name, text] of Object.entries(UNRELATED)) names.set(await addContent(server, kb, text), name);
    const ids = {} as Record<keyof HybridCase['docs'], string>;
    for (const [name, text] of Object.entries(c.docs) as Array<[keyof HybridCase['docs'], string]>) {
      ids[name] = await addContent(server, kb, text);
      names.set(ids[name], name);
    }
    hybridKbs.push({ kb, ids, names });
  }
}, 120_000);

afterAll(async () => {
  await server?.stop();
  server?.cleanup();
});

describe('TEXT_HIGH_QUALITY with all-MiniLM-L6-v2 from the shared model folder', () => {
  test('the knowledge base configuration names the model: Xenova/all-MiniLM-L6-v2, 384 dimensions', async () => {
    const kb = await server.api('GET', `${API}/${topicsKb}`);
    expect(kb.status).toBe(200);
    const configId = kb.body.data.activeKnowledgeBaseConfigurationId;
    expect(typeof configId).toBe('string');
    const config = await server.api('GET', `${API}/${topicsKb}/configuration`);
    expect(config.status).toBe(200);
    expect(config.body.data).toMatchObject({
      id: configId,
      knowledgeBaseId: topicsKb,
      type: 'TEXT_HIGH_QUALITY',
      embedding: { provider: 'transformers', model: MODEL, dimensions: 384, metric: 'cosine' },
    });
  });

  test('semantic search ranks first a paraphrase that shares no word with the query; full-text does not find it', async () => {
    let fullTextFoundSomething = false;
    for (const { query, target } of PARAPHRASES) {
      // The property the test rests on, checked with the engine's analyzer.
      expect({ query, target, shared: sharedTerms(query, TOPICS[target]) }).toEqual({ query, target, shared: [] });

      const semantic = await search(server, topicsKb, 'semantic', query);
      expect({ query, first: topicOf.get(semantic[0].contentId) }).toEqual({ query, first: target });
      expect(semantic[0].score).toBeGreaterThan(semantic[1].score);

      // Full-text finds exactly the documents that share a term with the query, and so not the target.
      const fullText = (await search(server, topicsKb, 'full-text', query)).map((h) => topicOf.get(h.contentId));
      const expected = (Object.keys(TOPICS) as Topic[]).filter((t) => sharedTerms(query, TOPICS[t]).length > 0);
      expect({ query, found: [...fullText].sort() }).toEqual({ query, found: expected.sort() });
      expect(fullText).not.toContain(target);
      if (fullText.length > 0) fullTextFoundSomething = true;
    }
    // At least one query's full-text search answers (the "dog" decoy), just not with the paraphrase.
    expect(fullTextFoundSomething).toBe(true);
  });

  for (const [i, c] of HYBRID_CASES.entries()) {
    test(`hybrid (default weight) ranks the document matching by words and by meaning first: ${c.name}`, async () => {
      const { kb, ids, names } = hybridKbs[i]!;
      const { docs } = c;
      expect(sharedTerms(HYBRID_QUERY, docs.semantic)).toEqual([]);
      expect(sharedTerms(HYBRID_QUERY, docs.lexical).length).toBeGreaterThan(0);
      expect(sharedTerms(HYBRID_QUERY, docs.both).length).toBeGreaterThan(0);
      const named = (hits: any[]) => hits.map((h) => names.get(h.contentId));

      // Each leg alone finds its own match: full-text the word-sharing documents (never the
      // paraphrase); semantic the paraphrase, above the document that only shares words.
      const fullText = named(await search(server, kb, 'full-text', HYBRID_QUERY));
      expect([...fullText].sort()).toEqual(['both', 'lexical']);
      const semantic = named(await search(server, kb, 'semantic', HYBRID_QUERY));
      expect(semantic.indexOf('semantic')).toBeLessThan(semantic.indexOf('lexical'));
      // The case's point: one leg alone puts another document first.
      expect((c.misleadingLeg === 'full-text' ? fullText : semantic)[0]).not.toBe('both');

      // No semanticWeight: the spec's default (0.5).
      const hybrid = await search(server, kb, 'hybrid', HYBRID_QUERY);
      expect(named(hybrid)[0]).toBe('both');
      expect(hybrid[0].contentId).toBe(ids.both);
      expect(hybrid[0].score).toBeGreaterThan(hybrid[1].score);
      // The three matches come before the unrelated documents.
      expect(named(hybrid.slice(0, 3)).sort()).toEqual(['both', 'lexical', 'semantic']);
    });
  }

  test('every answer is identical after a restart: from the log, then from the shutdown snapshot', async () => {
    /** Every search of this file on every knowledge base, and the configurations. */
    const everything = async (s: InProcessServer) => {
      const out: unknown[] = [];
      for (const kb of [topicsKb, ...hybridKbs.map((h) => h.kb)]) {
        out.push({ kb, configuration: (await s.api('GET', `${API}/${kb}/configuration`)).body });
        const queries = kb === topicsKb ? PARAPHRASES.map((p) => p.query) : [HYBRID_QUERY];
        // One at a time: each query is embedded alone, as it would be by itself.
        for (const query of queries) for (const mode of MODES) out.push({ kb, query, mode, hits: await search(s, kb, mode, query) });
      }
      return out;
    };
    const recovered = (s: InProcessServer) => JSON.parse(s.output.find((l) => l.includes('"msg":"state recovered"'))!).recovery;
    const before = await everything(server);
    expect(before.length).toBe(3 + (PARAPHRASES.length + HYBRID_CASES.length) * MODES.length);

    for (const from of ['log', 'snapshot'] as const) {
      expect(await server.stop()).toBe(0);
      server = await InProcessServer.start({ dataDir, env: ENV });
      const recovery = recovered(server);
      if (from === 'log') expect(recovery.snapshot).toBeUndefined();
      else expect(recovery.snapshot?.seq).toBeGreaterThan(0);
      expect(recovery.contents).toBe(Object.keys(TOPICS).length + HYBRID_CASES.length * (Object.keys(UNRELATED).length + 3));
      expect(recovery.requeued).toBe(0);
      // Exact equality: ids, order, chunk text, and every score to the last bit.
      expect(await everything(server)).toEqual(before);
    }
  }, 120_000);
});
