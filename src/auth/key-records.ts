// Where organization and key records live: a record log (engine/index.ts, RecordLog). One node:
// a segment log in DATA_DIR/auth/keys/ (the key file of earlier versions, auth/keys.log, is moved
// in as its first segment: the same frames, nothing lost). Cluster mode: a replicated JetStream
// stream beside the log (`<CLUSTER_STREAM>_AUTH`), so a key issued through any node's admin command
// is valid on every node within a moment.
import { join } from 'node:path';
import { JetStreamLog, SegmentLog, type EngineLog, type LogEntry, type RecordLog } from '../../engine';
import type { Config } from '../config';
import type { KeyRecord } from './key-store';

export interface KeyRecords {
  /** Every record so far, in order. */
  records(): KeyRecord[];
  /** Append durably (replicated, in cluster mode) before resolving. */
  append(records: KeyRecord[]): Promise<void>;
  close(): Promise<void>;
}

/** The key log's directory on one node. */
export const keyLogDir = (dataDir: string) => join(dataDir, 'auth', 'keys');
/** The key file of earlier versions (one file of the same frames), adopted by the key log. */
export const legacyKeyFile = (dataDir: string) => join(dataDir, 'auth', 'keys.log');

const encoder = new TextEncoder();
const decoder = new TextDecoder();
export const encodeKeyRecord = (record: KeyRecord): Uint8Array => encoder.encode(JSON.stringify(record));
export const decodeKeyRecord = (entry: LogEntry): KeyRecord => JSON.parse(decoder.decode(entry.payload)) as KeyRecord;

/**
 * The key log, opened: `onRecord` sees every record it holds, and, from a JetStream stream, every
 * record to come (a segment log another process appends to is followed with followKeyLog).
 */
export async function openKeyLog(config: Pick<Config, 'dataDir' | 'cluster'>, onRecord: (record: KeyRecord) => void, log?: EngineLog): Promise<RecordLog> {
  const visit = (entry: LogEntry) => onRecord(decodeKeyRecord(entry));
  if (config.cluster) {
    const { servers, natsAuth: auth, stream, replicas } = config.cluster;
    return JetStreamLog.open({ servers, auth, stream: `${stream}_AUTH`, replicas }, visit);
  }
  // One segment for ever (a few hundred bytes a key): a reader in another process always knows every file.
  return SegmentLog.open({ dir: keyLogDir(config.dataDir), segmentBytes: Infinity, adopt: legacyKeyFile(config.dataDir), log }, visit);
}

/** The admin command's view of a key log: the records it held when opened, and appends. */
export function keyRecordsOf(log: RecordLog, seen: KeyRecord[]): KeyRecords {
  return {
    records: () => seen,
    append: async (records) => {
      for (const r of records) await log.append(encodeKeyRecord(r));
    },
    close: () => log.close(),
  };
}

export async function openKeyRecords(config: Pick<Config, 'dataDir' | 'cluster'>): Promise<KeyRecords> {
  const seen: KeyRecord[] = [];
  const log = await openKeyLog(config, (r) => seen.push(r));
  return keyRecordsOf(log, seen);
}

/**
 * Records appended to `log` by another process (the admin command beside a one-node server), handed
 * to `onRecord` within `everyMs`: the log is read past the last record seen whenever its size changed.
 */
export function pollKeyLog(log: RecordLog, onRecord: (record: KeyRecord) => void, everyMs = 1000): { stop(): void } {
  let lastSeq = log.lastSequence;
  let lastSize = -1;
  let busy = false;
  const poll = async () => {
    if (busy) return;
    busy = true;
    try {
      const size = await log.sizeBytes();
      if (size === lastSize) return;
      lastSize = size;
      await log.read(lastSeq, (entry) => {
        lastSeq = entry.seq;
        onRecord(decodeKeyRecord(entry));
      });
    } catch {
      lastSize = -1; // read again next time
    } finally {
      busy = false;
    }
  };
  const timer = setInterval(() => void poll(), everyMs);
  timer.unref?.();
  return { stop: () => clearInterval(timer) };
}

/**
 * The server's keys: every record of the key log now, and those appended later (followed from the
 * cluster's stream, or polled from the one-node log the admin command writes). Resolves once the
 * records so far are handed over.
 */
export async function followKeyLog(
  config: Pick<Config, 'dataDir' | 'cluster'>,
  onRecord: (record: KeyRecord) => void,
  say?: EngineLog,
): Promise<{ close(): Promise<void> }> {
  const log = await openKeyLog(config, onRecord, say);
  if (config.cluster) return log;
  const polling = pollKeyLog(log, onRecord);
  return {
    close: async () => {
      polling.stop();
      await log.close();
    },
  };
}
