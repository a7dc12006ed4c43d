// A text as the text store keeps it (engine/text/text-store.ts) and binary snapshot records carry it
// (engine/log/codec.ts): Latin-1, one byte a character, when every character fits, else UTF-16LE,
// two bytes a character (so a character range is a byte range). A restart hands such bytes to the
// store as they are, without making a string of them.
const NOT_LATIN1 = /[^\u0000-\u00ff]/;

/** Whether every character of `text` fits in one Latin-1 byte. */
export const isLatin1 = (text: string): boolean => !NOT_LATIN1.test(text);

export class EncodedText {
  constructor(
    /** The characters' bytes (a view: valid as long as the buffer it is a view of). */
    readonly bytes: Uint8Array,
    /** UTF-16LE (else Latin-1). */
    readonly wide: boolean,
  ) {}

  /** Length in characters (UTF-16 code units, as String.length). */
  get length(): number {
    return this.wide ? this.bytes.length / 2 : this.bytes.length;
  }

  toString(): string {
    return Buffer.from(this.bytes.buffer, this.bytes.byteOffset, this.bytes.byteLength).toString(this.wide ? 'utf16le' : 'latin1');
  }
}
