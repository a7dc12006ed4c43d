// Log payloads: [u32 JSON length][JSON record][optional binary attachment]. The attachment holds
// bulk numeric data (vectors) that JSON would bloat.

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function encodePayload(record: unknown, attachment?: Uint8Array): Uint8Array {
  const json = encoder.encode(JSON.stringify(record));
  const out = new Uint8Array(4 + json.length + (attachment?.length ?? 0));
  new DataView(out.buffer).setUint32(0, json.length, true);
  out.set(json, 4);
  if (attachment) out.set(attachment, 4 + json.length);
  return out;
}

export function decodePayload<T>(payload: Uint8Array): { record: T; attachment: Uint8Array } {
  const len = new DataView(payload.buffer, payload.byteOffset, payload.byteLength).getUint32(0, true);
  const record = JSON.parse(decoder.decode(payload.subarray(4, 4 + len))) as T;
  return { record, attachment: payload.subarray(4 + len) };
}
