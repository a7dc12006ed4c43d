// Record framing shared by every append-only file the service keeps (the write-ahead log and the
// key store): [u32 payload length][u32 crc32 of seq+payload][u64 sequence number][payload].
// A reader stops at the first frame that is short or fails its checksum: a torn tail.
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';

export const FRAME_HEADER = 16;
/** Frames larger than this are taken as garbage (a length field read from a torn write). */
export const MAX_FRAME_PAYLOAD = 1 << 30;

export function encodeFrame(seq: number, payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(FRAME_HEADER + payload.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, payload.length, true);
  view.setBigUint64(8, BigInt(seq), true);
  out.set(payload, FRAME_HEADER);
  view.setUint32(4, Bun.hash.crc32(out.subarray(8)), true);
  return out;
}

export interface Frame {
  seq: number;
  payload: Uint8Array;
  /** Offset of the frame in the buffer it was read from. */
  offset: number;
  /** Offset just past the frame. */
  end: number;
}

export type FrameScan = { ok: true; frames: Frame[]; end: number } | { ok: false; frames: Frame[]; end: number; reason: string };

/** Read every intact frame; `end` is where the intact prefix stops. */
export function scanFrames(buf: Uint8Array): FrameScan {
  const frames: Frame[] = [];
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  let pos = 0;
  while (pos < buf.length) {
    if (buf.length - pos < FRAME_HEADER) {
      return { ok: false, frames, end: pos, reason: `partial frame header (${buf.length - pos} bytes)` };
    }
    const len = view.getUint32(pos, true);
    const crc = view.getUint32(pos + 4, true);
    if (len === 0 && crc === 0) {
      return { ok: false, frames, end: pos, reason: 'zero-filled region' };
    }
    if (len > MAX_FRAME_PAYLOAD || pos + FRAME_HEADER + len > buf.length) {
      return { ok: false, frames, end: pos, reason: `frame of ${len} bytes runs past the end of the file` };
    }
    const body = buf.subarray(pos + 8, pos + FRAME_HEADER + len);
    if (Bun.hash.crc32(body) !== crc) {
      return { ok: false, frames, end: pos, reason: 'checksum mismatch' };
    }
    const seq = Number(view.getBigUint64(pos + 8, true));
    frames.push({ seq, payload: buf.subarray(pos + FRAME_HEADER, pos + FRAME_HEADER + len), offset: pos, end: pos + FRAME_HEADER + len });
    pos += FRAME_HEADER + len;
  }
  return { ok: true, frames, end: pos };
}

export type FileScan = ({ ok: true } | { ok: false; reason: string }) & {
  frames: number;
  end: number;
  /** With `checksum`: the CRC32 of the file's first `end` bytes (the intact frames). */
  crc32?: number;
};

/**
 * Every intact frame of the file at `path`, in order, read in pieces of about `pieceBytes` (a larger
 * frame is read whole) so that a file of gigabytes is never in memory at once. A frame's payload is
 * a view of the reading buffer, valid only during `visit` (copy what is kept). Stops at the first
 * frame that is short or fails its checksum, as scanFrames does. `poison` (tests): every payload is
 * zeroed once visited, so that a view kept past `visit` shows. `checksum`: the CRC32 of the
 * intact frames' bytes is taken on the way (a whole-file checksum without reading the file again).
 */
export function readFramesSync(
  path: string,
  visit: (seq: number, payload: Uint8Array) => void,
  pieceBytes = 8 << 20,
  poison = false,
  checksum = false,
): FileScan {
  const fd = openSync(path, 'r');
  try {
    const size = fstatSync(fd).size;
    let buf = new Uint8Array(Math.max(pieceBytes, FRAME_HEADER));
    let view = new DataView(buf.buffer);
    let filled = 0; // bytes of buf holding file data
    let pos = 0; // next frame's start in buf
    let base = 0; // file offset of buf[0]
    let frames = 0;
    let crc = 0;
    const crc32 = () => (checksum ? { crc32: crc } : {});
    const fail = (reason: string): FileScan => ({ ok: false, frames, end: base + pos, reason, ...crc32() });
    for (;;) {
      const avail = filled - pos;
      const left = size - base - pos; // bytes of the file from this frame on
      if (left <= 0) return { ok: true, frames, end: base + pos, ...crc32() };
      if (left < FRAME_HEADER) return fail(`partial frame header (${left} bytes)`);
      let need = FRAME_HEADER;
      if (avail >= FRAME_HEADER) {
        const len = view.getUint32(pos, true);
        if (len === 0 && view.getUint32(pos + 4, true) === 0) return fail('zero-filled region');
        // A length read from a torn write: never allocated for.
        if (len > MAX_FRAME_PAYLOAD || FRAME_HEADER + len > left) return fail(`frame of ${len} bytes runs past the end of the file`);
        need = FRAME_HEADER + len;
      }
      if (avail < need) {
        // Keep the unread tail at the start (in a larger buffer when one frame needs it), read after it.
        if (need > buf.length) {
          const grown = new Uint8Array(need + pieceBytes);
          grown.set(buf.subarray(pos, filled));
          buf = grown;
          view = new DataView(buf.buffer);
        } else {
          buf.copyWithin(0, pos, filled);
        }
        base += pos;
        filled = avail;
        pos = 0;
        while (filled < buf.length) {
          const n = readSync(fd, buf, filled, buf.length - filled, null);
          if (n === 0) break;
          filled += n;
        }
        if (filled < need) return fail('the file shrank while it was read');
        continue;
      }
      if (Bun.hash.crc32(buf.subarray(pos + 8, pos + need)) !== view.getUint32(pos + 4, true)) return fail('checksum mismatch');
      if (checksum) crc = Bun.hash.crc32(buf.subarray(pos, pos + need), crc);
      visit(Number(view.getBigUint64(pos + 8, true)), buf.subarray(pos + FRAME_HEADER, pos + need));
      if (poison) buf.fill(0, pos + FRAME_HEADER, pos + need);
      frames++;
      pos += need;
    }
  } finally {
    closeSync(fd);
  }
}
