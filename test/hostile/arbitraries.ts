// fast-check generators of hostile request bodies. Bodies are built as a small JSON syntax tree and
// printed by `printJson`, so they can hold what a JS object cannot: own "__proto__" keys, duplicate
// keys, number tokens such as 1e999 or -0, and raw (invalid) fragments.
import fc from 'fast-check';

export type Json =
  | { t: 'str'; v: string }
  | { t: 'num'; v: string }
  | { t: 'lit'; v: 'true' | 'false' | 'null' }
  | { t: 'arr'; items: Json[] }
  | { t: 'obj'; entries: [string, Json][] }
  /** Printed verbatim: not necessarily JSON. */
  | { t: 'raw'; v: string };

export const str = (v: string): Json => ({ t: 'str', v });
export const num = (v: number | string): Json => ({ t: 'num', v: String(v) });
export const obj = (entries: [string, Json][]): Json => ({ t: 'obj', entries });
export const arr = (items: Json[]): Json => ({ t: 'arr', items });

export function printJson(node: Json): string {
  switch (node.t) {
    case 'str':
      return JSON.stringify(node.v); // lone surrogates become \udxxx escapes, NUL becomes \u0000
    case 'num':
    case 'lit':
    case 'raw':
      return node.v;
    case 'arr':
      return `[${node.items.map(printJson).join(',')}]`;
    case 'obj':
      return `{${node.entries.map(([k, v]) => `${JSON.stringify(k)}:${printJson(v)}`).join(',')}}`;
  }
}

// --- strings ---------------------------------------------------------------------------------

const MiB = 1024 * 1024;

/** Built once: strings of a few MiB are costly to make in every run. */
export const HUGE = {
  /** 1 MiB: over every field limit but text's. */
  mib: 'h'.repeat(MiB),
  /** One byte over the 10 MiB text limit (MAX_TEXT_BYTES default). */
  overText: 'x'.repeat(10 * MiB + 1),
  /** Under 10 Mi characters but over 10 MiB of UTF-8 (2 bytes each). */
  overTextBytes: 'é'.repeat(5 * MiB + 1),
  /** Over the 12 MiB JSON body limit (MAX_JSON_BODY_BYTES default) once in a body. */
  overBody: 'b'.repeat(12 * MiB + 16),
};

const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c));
const control = fc.integer({ min: 0, max: 0x1f }).map((c) => String.fromCharCode(c));
const special = fc.constantFrom(
  '\u0000',
  '\u202e', // RIGHT-TO-LEFT OVERRIDE
  '\u202d',
  '\u2066',
  '\u200b', // zero width space
  '\ufeff', // BOM
  '\ufffe',
  '\uffff',
  '\u0085', // NEL
  '\u2028',
  '\u2029',
  '\u007f',
  '\\',
  '"',
  '\r\n',
  '\t',
  ' ',
  '%00',
  '${x}',
  '{{x}}',
  '<script>',
  "' OR 1=1 --",
  '../',
);

/** Short strings mixing ordinary text with control characters, lone surrogates and format characters. */
export const nastyString = fc
  .array(
    fc.oneof(
      { arbitrary: fc.string({ maxLength: 6 }), weight: 3 },
      { arbitrary: fc.string({ unit: 'binary', maxLength: 4 }), weight: 2 },
      loneSurrogate,
      control,
      special,
    ),
    {
      maxLength: 8,
    },
  )
  .map((parts) => parts.join(''));

export const hostileString = fc.oneof(
  { arbitrary: nastyString, weight: 12 },
  {
    arbitrary: fc.constantFrom(
      '',
      ' ',
      ' \t\n ',
      '\u0000',
      'a\u0000b',
      '\ud800',
      '\udfff',
      'x\udc00y',
      '\u202eevil',
      'evil\u202etxt.exe',
      '__proto__',
      'constructor',
      'prototype',
      'null',
      'undefined',
      '1e999',
      'TEXT_HIGH_QUALITY ',
      'text_high_quality',
      'x'.repeat(257),
      'y'.repeat(1025),
      'z'.repeat(4097),
    ),
    weight: 4,
  },
  // A huge string is rare: each costs tens of milliseconds to send and check. (The 10 MiB ones
  // are field-specific: see bodies.test.ts.)
  { arbitrary: fc.constant(HUGE.mib), weight: 1 },
);

/** hostileString without the huge one, for values at the top of a body. */
const hostileSmallString = hostileString.filter((s) => s.length < 100_000);

export const hostileKey = fc.oneof(
  {
    arbitrary: fc.constantFrom(
      '__proto__',
      'constructor',
      'prototype',
      'toString',
      'hasOwnProperty',
      'valueOf',
      '__defineGetter__',
      '',
      ' ',
      '\u0000',
      '\u202e',
      '\ud800',
      'k'.repeat(65),
      'k'.repeat(64),
    ),
    weight: 3,
  },
  { arbitrary: nastyString, weight: 2 },
  { arbitrary: fc.string({ maxLength: 10 }), weight: 2 },
);

// --- values ----------------------------------------------------------------------------------

const numberToken = fc.oneof(
  fc.constantFrom(
    '0',
    '-0',
    '1',
    '1.0',
    '1e0',
    '1E2',
    '-1',
    '0.5',
    '1.5',
    '100',
    '101',
    '1e999',
    '-1e999',
    '1e-400',
    '12345678901234567890',
    '9007199254740993',
    '0.30000000000000004',
  ),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => String(d)),
  fc.integer().map(String),
);

const scalarOf = (strings: fc.Arbitrary<string>): fc.Arbitrary<Json> =>
  fc.oneof(
    { arbitrary: strings.map(str), weight: 4 },
    { arbitrary: numberToken.map((v) => ({ t: 'num', v }) as Json), weight: 2 },
    { arbitrary: fc.constantFrom<'true' | 'false' | 'null'>('true', 'false', 'null').map((v) => ({ t: 'lit', v }) as Json), weight: 1 },
  );

const treeOf = (strings: fc.Arbitrary<string>): fc.Arbitrary<Json> =>
  fc.letrec<{ node: Json }>((tie) => ({
    node: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      { arbitrary: scalarOf(strings), weight: 3 },
      { arbitrary: fc.array(tie('node'), { maxLength: 5 }).map(arr), weight: 1 },
      { arbitrary: fc.array(fc.tuple(hostileKey, tie('node')), { maxLength: 5 }).map(obj), weight: 1 },
    ),
  })).node;

/** Any JSON value: hostile scalars, arrays and objects with hostile keys (duplicates allowed), a few levels deep. */
export const jsonTree: fc.Arbitrary<Json> = treeOf(hostileString);

/**
 * The same without huge strings, for whole bodies: a top-level string or array of N elements is a
 * known slow path of the search routes (see the "wide bodies" test), pinned there instead.
 */
export const jsonTreeSmall: fc.Arbitrary<Json> = treeOf(hostileSmallString);

/** JSON nested `depth` levels deep in one of several shapes (closed or not). */
export function deepJson(depth: number, shape: 'array' | 'object' | 'array-open' | 'object-open' | 'mixed'): string {
  switch (shape) {
    case 'array':
      return '['.repeat(depth) + ']'.repeat(depth);
    case 'array-open':
      return '['.repeat(depth);
    case 'object':
      return `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
    case 'object-open':
      return '{"a":'.repeat(depth);
    case 'mixed':
      return `${'[{"a":'.repeat(depth)}null${'}]'.repeat(depth)}`;
  }
}

const deepBody = fc.tuple(
  fc.constantFrom(65, 100, 1000, 10_000),
  fc.constantFrom<'array' | 'object' | 'array-open' | 'object-open' | 'mixed'>('array', 'object', 'array-open', 'object-open', 'mixed'),
);

/** Bytes that are not (or not only) JSON text. */
export const garbageBody: fc.Arbitrary<string | Uint8Array> = fc.oneof(
  fc.constantFrom(
    '{',
    '}',
    '[',
    '"',
    '{"a":}',
    '{"text":"x",}',
    "{'text':'x'}",
    '{"text":"a\u0000b"}', // a raw NUL inside a string: invalid JSON
    '{"text":"line\nbreak"}', // raw control character: invalid JSON
    'null',
    'true',
    '0',
    '-0',
    '1e999',
    '"just a string"',
    '[]',
    '{}',
    'text=hello&metadata=x',
    '\ufeff{"text":"bom"}',
    '{"text":"x"}{"text":"y"}',
    '{"text":"x"} trailing',
    '{"__proto__":{"polluted":true}}',
    '{"constructor":{"prototype":{"polluted":true}}}',
  ),
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  // Raw bytes: invalid UTF-8, CESU-8 surrogates, NUL, overlong encodings.
  fc
    .array(fc.oneof(fc.integer({ min: 0, max: 255 }), fc.constantFrom(0xed, 0xa0, 0x80, 0xc0, 0xff, 0xfe, 0x00)), { maxLength: 40 })
    .map((bytes) => new Uint8Array([0x7b, 0x22, 0x74, 0x65, 0x78, 0x74, 0x22, 0x3a, 0x22, ...bytes, 0x22, 0x7d])), // {"text":"<bytes>"}
);

export interface FieldSpec {
  /** A valid value of the field, so near-valid bodies reach the checks behind the schema. */
  valid: fc.Arbitrary<Json>;
  /** Hostile values specific to the field (besides the generic ones). */
  hostile?: fc.Arbitrary<Json>;
  /** Put beside a deeply nested field. */
  validSample: Json;
}

/**
 * A body for a route with these fields: each field absent, valid or hostile (a generic hostile
 * value of any type or a field-specific one), in random order, sometimes with extra keys; or a
 * random JSON value; or garbage; or deep nesting (alone or inside a field).
 */
export function bodyFor(fields: Record<string, FieldSpec>): fc.Arbitrary<string | Uint8Array> {
  const names = Object.keys(fields);
  const fieldValue = (name: string): fc.Arbitrary<Json | undefined> =>
    fc.oneof(
      { arbitrary: fc.constant(undefined), weight: 1 },
      { arbitrary: fields[name]!.valid, weight: 4 },
      { arbitrary: jsonTree, weight: 2 },
      ...(fields[name]!.hostile ? [{ arbitrary: fields[name]!.hostile!, weight: 2 }] : []),
    );
  const structured = fc
    .tuple(
      fc.tuple(...names.map(fieldValue)),
      fc.array(fc.tuple(hostileKey, jsonTree), { maxLength: 2 }),
      fc.boolean(),
      fc.option(fc.constantFrom(...names)), // a field sent twice
    )
    .map(([values, extras, extrasFirst, dup]) => {
      const entries: [string, Json][] = [];
      names.forEach((n, i) => values[i] !== undefined && entries.push([n, values[i]!]));
      if (dup) entries.push([dup, str('duplicate')]);
      return printJson(obj(extrasFirst ? [...extras, ...entries] : [...entries, ...extras]));
    });
  const deepInField = fc.tuple(fc.constantFrom(...names), deepBody).map(([name, [depth, shape]]) => {
    const entries: [string, Json][] = names.map((n) => [n, n === name ? { t: 'raw', v: deepJson(depth, shape) } : fields[n]!.validSample]);
    return printJson(obj(entries));
  });
  // Every field valid but one, which is hostile: these reach the checks behind the schema.
  const nearValid = fc
    .tuple(
      fc.tuple(...names.map((n) => fields[n]!.valid)),
      fc.nat({ max: names.length - 1 }),
      fc.oneof(jsonTree, ...names.map((n) => fields[n]!.hostile ?? jsonTree)),
      fc.boolean(),
    )
    .map(([values, which, bad, drop]) => {
      const entries: [string, Json][] = names.map((n, i) => [n, i === which ? bad : values[i]!]);
      return printJson(obj(drop ? entries.filter((_, i) => i !== which) : entries));
    });
  return fc.oneof(
    { arbitrary: structured, weight: 6 },
    { arbitrary: nearValid, weight: 4 },
    { arbitrary: jsonTreeSmall.map(printJson), weight: 2 },
    { arbitrary: garbageBody, weight: 2 },
    { arbitrary: deepBody.map(([depth, shape]) => deepJson(depth, shape)), weight: 1 },
    { arbitrary: deepInField, weight: 1 },
  );
}

/** A field spec with a fixed valid sample for deep-in-field bodies. */
export function field(validSample: Json, valid: fc.Arbitrary<Json> = fc.constant(validSample), hostile?: fc.Arbitrary<Json>): FieldSpec {
  return { valid, hostile, validSample };
}
