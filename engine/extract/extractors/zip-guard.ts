// Zip-bomb guard for DOCX (a zip archive), run before the bytes reach mammoth/JSZip. yauzl reads
// the central directory; every entry's declared sizes are checked against the caps before a single
// byte is inflated (entry count, total unpacked size, per-entry compression ratio). Then the
// entries the converter will read are inflated once with yauzl's size validation, which stops an
// entry the moment it inflates past its declared size (a header that lies about its size).
import yauzl from 'yauzl';
import { ExtractionError, formatCount, reasonOf } from '../errors';

export interface ZipLimits {
  /** Most entries in the archive. */
  maxEntries: number;
  /** Most bytes all entries may unpack to, by their declared sizes. */
  maxTotalUncompressed: number;
  /** Highest unpacked/packed ratio of one entry larger than `ratioMinSize`. */
  maxRatio: number;
  ratioMinSize: number;
  /** Most bytes the entries the converter reads may unpack to, by their declared sizes. */
  maxConvertedBytes: number;
}

export const DOCX_ZIP_LIMITS: ZipLimits = {
  maxEntries: 5_000,
  maxTotalUncompressed: 256 * 1024 * 1024,
  maxRatio: 200,
  ratioMinSize: 1024 * 1024,
  maxConvertedBytes: 256 * 1024 * 1024,
};

const MiB = 1024 * 1024;

function broken(err: unknown): ExtractionError {
  if (err instanceof ExtractionError) return err;
  return new ExtractionError('EXTRACTION_FAILED', 'The Word document could not be read; it is not a valid DOCX (zip) file.', reasonOf(err));
}

function open(bytes: Uint8Array): Promise<yauzl.ZipFile> {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return new Promise((resolve, reject) => {
    yauzl.fromBuffer(buffer, { lazyEntries: true, validateEntrySizes: true, decodeStrings: true, strictFileNames: false }, (err, zip) =>
      err || !zip ? reject(err ?? new Error('no zip')) : resolve(zip),
    );
  });
}

function readEntries(zip: yauzl.ZipFile, limits: ZipLimits): Promise<yauzl.Entry[]> {
  return new Promise((resolve, reject) => {
    const entries: yauzl.Entry[] = [];
    let total = 0;
    const fail = (err: unknown) => {
      zip.removeAllListeners();
      reject(err);
    };
    zip.on('entry', (entry: yauzl.Entry) => {
      entries.push(entry);
      if (entries.length > limits.maxEntries) {
        return fail(new ExtractionError('TOO_LARGE', `The Word document holds more than ${formatCount(limits.maxEntries)} files.`));
      }
      total += entry.uncompressedSize;
      if (total > limits.maxTotalUncompressed) {
        return fail(new ExtractionError('TOO_LARGE', `The Word document unpacks to more than ${formatCount(limits.maxTotalUncompressed / MiB)} MiB.`));
      }
      const ratio = entry.uncompressedSize / Math.max(1, entry.compressedSize);
      if (entry.uncompressedSize > limits.ratioMinSize && ratio > limits.maxRatio) {
        return fail(
          new ExtractionError('TOO_LARGE', `The Word document looks like a zip bomb: a part of it would unpack ${formatCount(Math.round(ratio))}-fold.`),
        );
      }
      zip.readEntry();
    });
    zip.once('end', () => resolve(entries));
    zip.once('error', fail);
    zip.readEntry();
  });
}

function drain(zip: yauzl.ZipFile, entry: yauzl.Entry): Promise<number> {
  return new Promise((resolve, reject) => {
    zip.openReadStream(entry, (err, stream) => {
      if (err || !stream) return reject(err ?? new Error('no stream'));
      let n = 0;
      stream.on('data', (chunk: Buffer) => {
        n += chunk.length;
      });
      stream.once('end', () => resolve(n));
      stream.once('error', reject);
    });
  });
}

/**
 * Refuses (TOO_LARGE) an archive over the limits and fails (EXTRACTION_FAILED) one that is not a
 * valid zip or whose entries do not unpack to their declared sizes. `verify` picks the entries
 * to inflate for the size check (the ones the converter reads).
 */
export async function guardZip(bytes: Uint8Array, limits: ZipLimits, verify: (name: string) => boolean): Promise<void> {
  let zip: yauzl.ZipFile;
  try {
    zip = await open(bytes);
  } catch (err) {
    throw broken(err);
  }
  try {
    if (zip.entryCount > limits.maxEntries) {
      throw new ExtractionError('TOO_LARGE', `The Word document holds more than ${formatCount(limits.maxEntries)} files.`);
    }
    const entries = await readEntries(zip, limits);
    const converted = entries.filter((e) => !e.fileName.endsWith('/') && verify(e.fileName)).reduce((sum, e) => sum + e.uncompressedSize, 0);
    if (converted > limits.maxConvertedBytes) {
      throw new ExtractionError(
        'TOO_LARGE',
        `The Word document's text parts unpack to ${formatCount(Math.ceil(converted / MiB))} MiB of XML; at most ${formatCount(Math.floor(limits.maxConvertedBytes / MiB))} MiB can be read.`,
      );
    }
    for (const entry of entries) {
      if (entry.fileName.endsWith('/') || !verify(entry.fileName)) continue;
      const n = await drain(zip, entry);
      if (n !== entry.uncompressedSize) throw new Error(`entry ${entry.fileName} unpacked to ${n} bytes, declared ${entry.uncompressedSize}`);
    }
  } catch (err) {
    throw broken(err);
  } finally {
    zip.close();
  }
}
