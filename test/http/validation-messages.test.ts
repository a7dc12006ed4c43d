// Validation messages a person understands (issue 14): for a table of bad bodies sent to the real
// server, the exact `details` — one entry per problem, each naming the field, what it must be and
// what was sent (cut short) — and a top-level message that leads with the first problem.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { createKb, InProcessServer } from '../helpers/server';

let server: InProcessServer;
let kb: string;
beforeAll(async () => {
  server = await InProcessServer.start();
  kb = await createKb(server);
});
afterAll(async () => {
  await server.stop();
  server.cleanup();
});

type Case = [name: string, route: 'kb' | 'content' | 'full-text' | 'hybrid', body: unknown, details: { path: string; message: string }[]];

const TYPES = 'one of TEXT_COST_EFFECTIVE, TEXT_HIGH_QUALITY, TEXT_AND_MEDIA_HIGH_QUALITY';
const METADATA_VALUE = 'a string of at most 1,024 characters, a number, a boolean or an array of at most 64 strings of at most 1,024 characters each';

const CASES: Case[] = [
  ['an unknown type names the allowed ones', 'kb', { name: 'x', type: 'FOO' }, [{ path: '/type', message: `must be ${TYPES}; got "FOO"` }]],
  ['a missing field is one entry, saying what it must be', 'kb', { name: 'x' }, [{ path: '/type', message: `'type' is required (${TYPES})` }]],
  [
    'a wrong type says what came',
    'kb',
    { name: 5, type: 'TEXT_HIGH_QUALITY' },
    [{ path: '/name', message: 'must be a string of at most 1,024 characters; got 5' }],
  ],
  ['an unknown field', 'kb', { name: 'x', type: 'TEXT_HIGH_QUALITY', color: 'red' }, [{ path: '/color', message: "unknown field 'color'" }]],
  [
    "another service's name for a field points to ours",
    'full-text',
    { query: 'x', filter: { team: 'a' } },
    [{ path: '/filter', message: "unknown field 'filter' (did you mean 'metadataFilter'?)" }],
  ],
  [
    'a misspelt field points to the right one',
    'hybrid',
    { query: 'x', semanticWieght: 0.5 },
    [{ path: '/semanticWieght', message: "unknown field 'semanticWieght' (did you mean 'semanticWeight'?)" }],
  ],
  ['top_k means limit', 'full-text', { query: 'x', top_k: 5 }, [{ path: '/top_k', message: "unknown field 'top_k' (did you mean 'limit'?)" }]],
  [
    'two problems, two entries',
    'kb',
    { name: 5, type: 'FOO' },
    [
      { path: '/name', message: 'must be a string of at most 1,024 characters; got 5' },
      { path: '/type', message: `must be ${TYPES}; got "FOO"` },
    ],
  ],
  [
    'an array metadata value with a number in it names the item',
    'content',
    { text: 'x', metadata: { tags: ['a', 5] } },
    [{ path: '/metadata/tags', message: 'must be an array of at most 64 strings of at most 1,024 characters each; item 1 is 5' }],
  ],
  [
    'a metadata string too long gets a length message, its value cut short',
    'content',
    { text: 'x', metadata: { note: 'y'.repeat(1025) } },
    [{ path: '/metadata/note', message: `must be a string of at most 1,024 characters; got a string of 1,025 characters ("${'y'.repeat(24)}…")` }],
  ],
  [
    'nested metadata lists every kind of value allowed',
    'content',
    { text: 'x', metadata: { a: { b: 1 } } },
    [{ path: '/metadata/a', message: `must be ${METADATA_VALUE}; got an object` }],
  ],
  [
    'too many array items',
    'content',
    { text: 'x', metadata: { tags: Array(65).fill('t') } },
    [{ path: '/metadata/tags', message: 'must be an array of at most 64 strings of at most 1,024 characters each; got an array of 65 items' }],
  ],
  ['text of the wrong type', 'content', { text: ['a'] }, [{ path: '/text', message: 'must be a string; got an array of 1 item' }]],
  ['a limit out of range', 'full-text', { query: 'q', limit: 0 }, [{ path: '/limit', message: 'must be an integer between 1 and 100; got 0' }]],
  ['a fractional limit', 'full-text', { query: 'q', limit: 2.5 }, [{ path: '/limit', message: 'must be an integer between 1 and 100; got 2.5' }]],
  [
    'an unknown fusion names the allowed ones',
    'hybrid',
    { query: 'q', fusion: 'max' },
    [{ path: '/fusion', message: 'must be one of weighted, rrf; got "max"' }],
  ],
  ['a weight out of range', 'hybrid', { query: 'q', semanticWeight: 1.5 }, [{ path: '/semanticWeight', message: 'must be a number between 0 and 1; got 1.5' }]],
];

function pathOf(route: Case[1]): string {
  if (route === 'kb') return '/api/v1/knowledge-bases';
  if (route === 'content') return `/api/v1/knowledge-bases/${kb}/contents`;
  return `/api/v1/knowledge-bases/${kb}/search/${route}`;
}

for (const [name, route, body, details] of CASES) {
  test(name, async () => {
    const res = await server.api('POST', pathOf(route), body);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(res.body.error.details).toEqual(details);
    const first = details[0]!;
    expect(res.body.error.message).toBe(`Invalid request body: ${first.path.slice(1).replaceAll('/', '.')}: ${first.message}`);
  });
}
