// Record framing shared by every append-only file the service keeps (the write-ahead log and the
// key store): [u32 payload length][u32 crc32 of seq+payload][u64 sequence number][payload].
// A reader stops at the first frame that is short or fails its checksum: a torn tail.

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
