// The chunks of one index set by document number, in columns instead of one object per chunk
// (issue 25): the owner (the item's live chunks, shared by all of an item's documents), the span in
// the item's text, the page, and the chunk id packed as bytes. Ids of the service's shape
// (`<prefix>_<28 hex digits>`, engine/ids.ts) take 15 bytes (a prefix code and 14 bytes); any
// other id is kept as a string on the side.

const ID_SHAPE = /^([a-z]{2,4})_([0-9a-f]{28})$/;
const ID_BYTES = 14;
const NO_PAGE = -1;

export class ChunkTable<Owner extends object> {
  private owners: (Owner | undefined)[] = [];
  private start = new Int32Array(0);
  private end = new Int32Array(0);
  private page = new Int32Array(0);
  /** Per document: 0 = the id is in `otherIds`, else 1 + the index of its prefix in `prefixes`. */
  private prefixCode = new Uint8Array(0);
  private idBytes = Buffer.alloc(0);
  private readonly prefixes: string[] = [];
  private readonly otherIds = new Map<number, string>();
  private count = 0;

  /** Document numbers handed out so far (gaps included). */
  get length(): number {
    return this.count;
  }

  /** Leave documents up to `doc` (excluded) empty: the next push takes `doc`. */
  skipTo(doc: number): void {
    if (doc < this.count) throw new Error(`document ${doc} is already taken`);
    this.reserve(doc);
    this.count = doc;
    this.owners.length = doc;
  }

  push(owner: Owner, id: string, start: number, end: number, page: number | undefined): number {
    const doc = this.count;
    this.reserve(doc + 1);
    this.owners.push(owner);
    this.start[doc] = start;
    this.end[doc] = end;
    this.page[doc] = page ?? NO_PAGE;
    const m = ID_SHAPE.exec(id);
    let code = m ? this.prefixes.indexOf(m[1]!) + 1 : 0;
    if (m && code === 0 && this.prefixes.length < 255) code = this.prefixes.push(m[1]!);
    this.prefixCode[doc] = code;
    if (code > 0) this.idBytes.write(m![2]!, doc * ID_BYTES, ID_BYTES, 'hex');
    else this.otherIds.set(doc, id);
    this.count = doc + 1;
    return doc;
  }

  /** Empty a document (its item was dropped). */
  clear(doc: number): void {
    if (doc >= this.count) return;
    this.owners[doc] = undefined;
    this.otherIds.delete(doc);
  }

  owner(doc: number): Owner | undefined {
    return this.owners[doc];
  }

  id(doc: number): string | undefined {
    if (this.owners[doc] === undefined) return undefined;
    const code = this.prefixCode[doc]!;
    if (code === 0) return this.otherIds.get(doc);
    return `${this.prefixes[code - 1]}_${this.idBytes.toString('hex', doc * ID_BYTES, (doc + 1) * ID_BYTES)}`;
  }

  startOf(doc: number): number {
    return this.start[doc]!;
  }

  endOf(doc: number): number {
    return this.end[doc]!;
  }

  pageOf(doc: number): number | undefined {
    const p = this.page[doc]!;
    return p === NO_PAGE ? undefined : p;
  }

  /** Bytes of the columns (the owners array counted as one pointer per document). */
  memoryBytes(): number {
    let bytes = this.start.byteLength + this.end.byteLength + this.page.byteLength + this.prefixCode.byteLength + this.idBytes.byteLength;
    bytes += 8 * this.owners.length;
    for (const id of this.otherIds.values()) bytes += 2 * id.length + 48;
    return bytes;
  }

  /** The columns up to `length` (views: only documents past it are written); owners are not part of it. */
  dump(): ChunkTableDump {
    const n = this.count;
    return {
      length: n,
      start: this.start.subarray(0, n),
      end: this.end.subarray(0, n),
      page: this.page.subarray(0, n),
      prefixCode: this.prefixCode.subarray(0, n),
      idBytes: new Uint8Array(this.idBytes.buffer, this.idBytes.byteOffset, n * ID_BYTES),
      prefixes: [...this.prefixes],
      otherIds: [...this.otherIds],
    };
  }

  /**
   * Take over a dump into this empty table; `owners` gives each document its owner (undefined: empty),
   * as the records replayed left them.
   */
  load(d: ChunkTableDump, owners: (Owner | undefined)[]): void {
    if (this.count > 0) throw new Error('a chunk table dump loads into an empty table');
    const n = d.length;
    if (owners.length !== n || [d.start, d.end, d.page, d.prefixCode].some((a) => a.length !== n) || d.idBytes.length !== n * ID_BYTES)
      throw new Error('chunk table dump: columns do not match its length');
    this.reserve(n);
    this.start.set(d.start);
    this.end.set(d.end);
    this.page.set(d.page);
    this.prefixCode.set(d.prefixCode);
    this.idBytes.set(d.idBytes);
    this.prefixes.push(...d.prefixes);
    for (const [doc, id] of d.otherIds) this.otherIds.set(doc, id);
    this.owners = owners;
    this.count = n;
  }

  private reserve(n: number): void {
    if (n <= this.start.length) return;
    const cap = Math.max(1024, n, Math.ceil(this.start.length * 1.5));
    const grow = <T extends Int32Array | Uint8Array>(a: T, b: T): T => {
      b.set(a as never);
      return b;
    };
    this.start = grow(this.start, new Int32Array(cap));
    this.end = grow(this.end, new Int32Array(cap));
    this.page = grow(this.page, new Int32Array(cap));
    this.prefixCode = grow(this.prefixCode, new Uint8Array(cap));
    const ids = Buffer.alloc(cap * ID_BYTES);
    this.idBytes.copy(ids);
    this.idBytes = ids;
  }
}

/** A ChunkTable's columns (dump/load). */
export interface ChunkTableDump {
  length: number;
  start: Int32Array<ArrayBuffer>;
  end: Int32Array<ArrayBuffer>;
  page: Int32Array<ArrayBuffer>;
  prefixCode: Uint8Array<ArrayBuffer>;
  /** ID_BYTES per document. */
  idBytes: Uint8Array<ArrayBuffer>;
  prefixes: string[];
  /** Ids not of the service's shape, by document. */
  otherIds: [number, string][];
}
