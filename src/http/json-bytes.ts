// JSON answers written straight to UTF-8 bytes.
//
// Why not Response.json: JSC's JSON.stringify copies a string quickly only when it is one-byte and
// needs no escaping. Chunk texts nearly always hold a newline or a quote, and many hold characters
// beyond Latin-1, so it copies them character by character (1–2 µs per 1.4 KB chunk) into a 16-bit
// answer that is transcoded to UTF-8 again on the way to the socket. Serialization was the largest
// part of what HTTP adds to a full-text search. Here a string is UTF-8-encoded natively in one pass
// and the few bytes that need a backslash (newlines, quotes) are found with native searches.
// Full-text search through HTTP at c=16: +8% req/s against Response.json (paired wrk runs, 43k items).
//
// The output equals JSON.stringify's byte for byte (test/http/json-bytes.test.ts). Only plain data
// takes this path; anything else (toJSON, class instances) is handed to JSON.stringify.

const NEWLINE = 0x0a;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
/** Strings up to this length are copied in JavaScript; longer ones by the native UTF-8 writer. */
const SHORT = 64;
/** A rare huge answer should not pin its buffer for the life of the process. */
const MAX_KEPT_BYTES = 8 * 1024 * 1024;
// Strings with escapes other than \n and \" (control characters, backslashes) are rare in text;
// lone surrogates (written as \uXXXX by JSON.stringify) are caught by isWellFormed.
const RARE_ESCAPES = /[\u0000-\u0009\u000b-\u001f\\]/;

export class JsonByteWriter {
  private buf: Buffer;
  private pos = 0;
  /** Offsets of the bytes to escape in the string being written (reused). */
  private readonly escapes: number[] = [];

  constructor(private readonly initialBytes = 64 * 1024) {
    this.buf = Buffer.allocUnsafe(initialBytes);
  }

  /**
   * Encode `value` as JSON. The bytes are a view of the writer's buffer, valid until the next call:
   * hand them to something that copies (a Response copies its body when constructed; tested).
   */
  encode(value: unknown): Uint8Array {
    this.pos = 0;
    if (this.buf.length > MAX_KEPT_BYTES) this.buf = Buffer.allocUnsafe(this.initialBytes);
    this.value(value);
    return this.buf.subarray(0, this.pos);
  }

  private reserve(bytes: number): void {
    const need = this.pos + bytes;
    if (need <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < need) size *= 2;
    const grown = Buffer.allocUnsafe(size);
    grown.set(this.buf.subarray(0, this.pos));
    this.buf = grown;
  }

  /** Text known to be valid JSON already (literals, numbers, JSON.stringify output). */
  private raw(text: string): void {
    // Short ASCII text byte by byte: a native call per comma would cost more than the copy.
    if (text.length <= SHORT) {
      this.reserve(text.length);
      const buf = this.buf;
      let pos = this.pos;
      for (let i = 0; i < text.length; i++) {
        const c = text.charCodeAt(i);
        if (c > 0x7f) return this.encoded(text);
        buf[pos++] = c;
      }
      this.pos = pos;
      return;
    }
    this.encoded(text);
  }

  private encoded(text: string): void {
    this.reserve(text.length * 3);
    this.pos += this.buf.write(text, this.pos, 'utf8');
  }

  /** A short string of printable ASCII needing no escapes (ids, keys), written directly; false if not. */
  private plainShortString(s: string): boolean {
    if (s.length > SHORT) return false;
    this.reserve(s.length + 2);
    const buf = this.buf;
    let pos = this.pos;
    buf[pos++] = QUOTE;
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c < 0x20 || c > 0x7e || c === QUOTE || c === BACKSLASH) return false;
      buf[pos++] = c;
    }
    buf[pos++] = QUOTE;
    this.pos = pos;
    return true;
  }

  private string(s: string): void {
    if (this.plainShortString(s)) return;
    if (RARE_ESCAPES.test(s) || !s.isWellFormed()) return this.raw(JSON.stringify(s));
    // Worst case: 3 bytes per UTF-16 unit, one more per escaped character, two quotes.
    this.reserve(s.length * 4 + 2);
    const buf = this.buf;
    buf[this.pos++] = QUOTE;
    const start = this.pos;
    const end = start + buf.write(s, start, 'utf8');
    // Newlines and quotes are ASCII, so their bytes never occur inside a multi-byte sequence.
    const text = buf.subarray(start, end);
    const at = this.escapes;
    at.length = 0;
    for (let i = text.indexOf(NEWLINE); i !== -1; i = text.indexOf(NEWLINE, i + 1)) at.push(i);
    for (let i = text.indexOf(QUOTE); i !== -1; i = text.indexOf(QUOTE, i + 1)) at.push(i);
    if (at.length > 0) {
      if (at.length > 1) at.sort((x, y) => x - y);
      // Shift the text right from its end, one escape at a time, inserting a backslash before each.
      let src = end;
      for (let k = at.length - 1; k >= 0; k--) {
        const i = start + at[k]!;
        const byte = buf[i]!;
        // Everything after this escape moves right by the escapes up to and including it.
        buf.copyWithin(i + 1 + k + 1, i + 1, src);
        buf[i + k] = BACKSLASH;
        buf[i + k + 1] = byte === NEWLINE ? 0x6e /* n */ : QUOTE;
        src = i;
      }
    }
    this.pos = end + at.length;
    buf[this.pos++] = QUOTE;
  }

  private value(v: unknown): void {
    switch (typeof v) {
      case 'string':
        return this.string(v);
      case 'number':
        return this.raw(Number.isFinite(v) ? String(v) : 'null');
      case 'boolean':
        return this.raw(v ? 'true' : 'false');
      case 'object':
        if (v === null) return this.raw('null');
        if (Array.isArray(v)) return this.array(v);
        if (isPlainObject(v)) return this.object(v);
        return this.raw(JSON.stringify(v));
      default:
        // undefined, functions and symbols only reach here inside arrays (objects skip them).
        if (typeof v === 'bigint') JSON.stringify(v); // throws, as JSON.stringify would
        return this.raw('null');
    }
  }

  private byte(b: number): void {
    this.reserve(1);
    this.buf[this.pos++] = b;
  }

  private array(items: readonly unknown[]): void {
    this.byte(0x5b); // [
    for (let i = 0; i < items.length; i++) {
      if (i > 0) this.byte(0x2c); // ,
      this.value(items[i]);
    }
    this.byte(0x5d); // ]
  }

  private object(o: Record<string, unknown>): void {
    this.byte(0x7b); // {
    let first = true;
    for (const key of Object.keys(o)) {
      const v = o[key];
      if (v === undefined || typeof v === 'function' || typeof v === 'symbol') continue;
      if (!first) this.byte(0x2c); // ,
      first = false;
      this.key(key);
      this.value(v);
    }
    this.byte(0x7d); // }
  }

  /** `"key":`, from a small cache of the keys answers repeat (field names). */
  private key(key: string): void {
    const bytes = keyBytes.get(key);
    if (bytes === undefined) {
      const start = this.pos;
      this.string(key);
      this.byte(0x3a); // :
      if (keyBytes.size < KEY_CACHE_SIZE && key.length <= SHORT) keyBytes.set(key, Uint8Array.from(this.buf.subarray(start, this.pos)));
      return;
    }
    this.reserve(bytes.length);
    const buf = this.buf;
    let pos = this.pos;
    for (let i = 0; i < bytes.length; i++) buf[pos++] = bytes[i]!;
    this.pos = pos;
  }
}

function isPlainObject(v: object): v is Record<string, unknown> {
  const proto = Object.getPrototypeOf(v);
  return (proto === Object.prototype || proto === null) && typeof (v as { toJSON?: unknown }).toJSON !== 'function';
}

/** Encoded `"key":` of object keys seen so far (shared by writers; bounded: metadata keys are user data). */
const keyBytes = new Map<string, Uint8Array>();
const KEY_CACHE_SIZE = 1024;

const answerWriter = new JsonByteWriter();

/** A route's plain-data answer (object or array) as JSON bytes; undefined for anything else. */
export function jsonAnswerBytes(value: unknown): Uint8Array | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  if (!Array.isArray(value) && !isPlainObject(value)) return undefined;
  return answerWriter.encode(value);
}
