// The one commit discipline of both modes: a record is logged, then applied in log order (every
// node applies every record it holds, whichever node wrote it), and the write resolves once it is
// durable and applied. A write with a check (a quota) is exact under concurrency, on one node or
// many: near its limit the check runs on the state as of the log position the append is
// conditional on, so a record another writer logged first makes it catch up, check again and retry.
import { encodePayload } from '../log/codec';
import type { LogRecord } from '../records';
import type { ShardSet } from '../shards';
import { LogConflict, type Node } from './node';

/** Conditional appends tried before a checked write gives up (each after catching up with the log). */
const CHECKED_APPEND_ATTEMPTS = 50;

export async function commitRecord(node: Node, shards: ShardSet, record: LogRecord, attachment?: Uint8Array, check?: () => boolean): Promise<number> {
  // Content goes to its knowledge base's shard's partition (a reader could take only its shards).
  const partition = record.t.startsWith('content.') ? `s${shards.shardOf((record as { kbId: string }).kbId)}` : 'kb';
  const entry = { record, attachment, payload: encodePayload(record, attachment), partition };
  // Far from any limit (or none), an append needs no condition.
  if (!check?.()) return node.append(entry);
  for (let attempt = 1; ; attempt++) {
    if (attempt > 1 && !check()) return node.append(entry);
    try {
      return await node.append(entry, node.appliedSeq);
    } catch (err) {
      if (!(err instanceof LogConflict) || attempt >= CHECKED_APPEND_ATTEMPTS) throw err;
      await node.catchUp(err.logSeq);
    }
  }
}
