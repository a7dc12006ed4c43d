// OCR bombs for the extraction-fairness tests: PNGs of 1-bit random noise. Cheap to make and to
// send (size²/8 bytes) and under any sensible pixel cap, yet tesseract reads one of 1500 × 1500
// for ~12 s, 2000 × 2000 for ~25 s (measured on an idle 2-core machine; far longer when loaded)
// and 6000 × 6000 for minutes.
import { deflateSync } from 'node:zlib';

function pngChunk(type: string, data: Uint8Array): Uint8Array {
  const out = new Uint8Array(12 + data.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, data.length);
  out.set(new TextEncoder().encode(type), 4);
  out.set(data, 8);
  view.setUint32(8 + data.length, Bun.hash.crc32(out.subarray(4, 8 + data.length)));
  return out;
}

/** A `size` × `size` PNG of 1-bit noise (deterministic for a seed). */
export function noisePng(size: number, seed = 1): Uint8Array {
  const ihdr = new Uint8Array(13);
  const view = new DataView(ihdr.buffer);
  view.setUint32(0, size);
  view.setUint32(4, size);
  ihdr.set([1, 0, 0, 0, 0], 8); // 1-bit grayscale, deflate, adaptive filter, no interlace
  const stride = Math.ceil(size / 8) + 1; // a filter byte (0: none) before each row
  const rows = new Uint8Array(stride * size);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < rows.length; i++) {
    if (i % stride === 0) continue;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    rows[i] = x & 0xff;
  }
  const parts = [
    new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', ihdr),
    pngChunk('IDAT', deflateSync(rows, { level: 1 })),
    pngChunk('IEND', new Uint8Array()),
  ];
  return new Uint8Array(Buffer.concat(parts));
}
