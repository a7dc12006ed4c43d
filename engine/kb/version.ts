// A content item's version whose text can leave the JavaScript heap: it is made with the text as a
// string and moved to the knowledge base's text store as soon as the knowledge base has one (when
// put: KnowledgeBase.putContent); `text` then reads it back from the store, `slice` only the
// characters asked for (a hit's chunk). Without a store (an engine without a data directory) it
// stays on the heap.
import type { Metadata } from '../filter/metadata';
import type { ContentSource } from '../records';
import type { EncodedText } from '../text/encoded-text';
import type { TextRef, TextStore } from '../text/text-store';
import type { ContentVersion } from './knowledge-base';

/** The source of every typed text, shared (one object per version otherwise). */
const TEXT_SOURCE: ContentSource = Object.freeze({ kind: 'text' });

/** Whether a source is typed text with nothing more (no object of its own needed). */
export function isPlainTextSource(source: ContentSource): boolean {
  if (source.kind !== 'text') return false;
  for (const key in source) if (key !== 'kind') return false;
  return true;
}

export class ItemVersion implements ContentVersion {
  readonly version: number;
  metadata: Metadata;
  source: ContentSource;
  pages?: number[];
  private held: string | undefined;
  // Where the text lies in `store` (a TextRef's fields, inline: no object per version).
  private at = -1;
  private chars = 0;
  private wide = false;
  private store: TextStore | undefined;
  private released = false;

  constructor(v: ContentVersion) {
    this.version = v.version;
    this.metadata = v.metadata;
    this.source = isPlainTextSource(v.source) ? TEXT_SOURCE : v.source;
    if (v.pages !== undefined) this.pages = v.pages;
    this.held = v.text;
  }

  get text(): string {
    return this.held ?? this.store!.read(this.ref());
  }

  set text(text: string) {
    this.release();
    this.held = text;
    this.store = undefined;
    this.released = false;
  }

  /** Characters [start, end) of the text, as String.prototype.slice with non-negative bounds. */
  slice(start: number, end: number): string {
    return this.held !== undefined ? this.held.slice(start, end) : this.store!.read(this.ref(), start, end);
  }

  get textLength(): number {
    return this.held !== undefined ? this.held.length : this.chars;
  }

  /** Whether the text lives in a store rather than on the heap. */
  get stored(): boolean {
    return this.held === undefined;
  }

  /** Where the text lies in its store; undefined while it is held on the heap (an item dump keeps either). */
  get storedRef(): TextRef | undefined {
    return this.held === undefined ? this.ref() : undefined;
  }

  /** A version whose text is in `store` at `ref` already (a restart from an item dump). */
  static stored(fields: Omit<ContentVersion, 'text'>, store: TextStore, ref: TextRef): ItemVersion {
    const version = new ItemVersion({ ...fields, text: '' });
    version.place(store, ref);
    return version;
  }

  private ref(): TextRef {
    return { at: this.at, length: this.chars, wide: this.wide };
  }

  /** Move the text to `store` (once: a stored text stays where it is). */
  moveTo(store: TextStore): void {
    if (this.held === undefined) return;
    this.place(store, store.put(this.held));
  }

  /** Its store wrote the text anew elsewhere in its file (TextStore.rewrite). */
  relocate(ref: TextRef): void {
    if (this.held !== undefined || !this.store) throw new Error('only a stored text can be relocated');
    this.place(this.store, ref);
  }

  /** The text is `encoded` (a restart's, its version's text being empty): into `store` as it is, or onto the heap without one. */
  takeEncoded(encoded: EncodedText, store: TextStore | undefined): void {
    if (store) this.place(store, store.putEncoded(encoded));
    else this.held = encoded.toString();
  }

  private place(store: TextStore, ref: TextRef): void {
    this.at = ref.at;
    this.chars = ref.length;
    this.wide = ref.wide;
    this.store = store;
    this.held = undefined;
  }

  /** The text answers nothing any more: its bytes in the store are dead (counted once; it stays readable). */
  release(): void {
    if (this.store && !this.released) this.store.release(this.ref());
    this.released = true;
  }
}
