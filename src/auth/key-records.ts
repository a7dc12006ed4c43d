// Where organization and key records live: the key file in DATA_DIR (one node), or, in cluster
// mode, a replicated JetStream stream beside the log (`<CLUSTER_STREAM>_AUTH`), so a key issued
// through any node's admin command is valid on every node within a moment.
import { JetStreamLog } from '../../engine';
import type { Config } from '../config';
import { appendKeyRecords, keyFilePath, readKeyFile, type KeyRecord } from './key-store';

export interface KeyRecords {
  /** Every record so far, in order. */
  records(): KeyRecord[];
  /** Append durably (replicated, in cluster mode) before resolving. */
  append(records: KeyRecord[]): Promise<void>;
  close(): Promise<void>;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The key stream of a cluster, followed: `onRecord` sees every record, those to come included. */
export async function followKeyStream(cluster: NonNullable<Config['cluster']>, onRecord: (record: KeyRecord) => void): Promise<JetStreamLog> {
  return JetStreamLog.open({ servers: cluster.servers, auth: cluster.natsAuth, stream: `${cluster.stream}_AUTH`, replicas: cluster.replicas }, (entry) =>
    onRecord(JSON.parse(decoder.decode(entry.payload)) as KeyRecord),
  );
}

export async function openKeyRecords(config: Pick<Config, 'dataDir' | 'cluster'>): Promise<KeyRecords> {
  if (config.cluster) {
    const seen: KeyRecord[] = [];
    const log = await followKeyStream(config.cluster, (r) => seen.push(r));
    return {
      records: () => seen,
      append: async (records) => {
        for (const r of records) await log.append(encoder.encode(JSON.stringify(r)));
      },
      close: () => log.close(),
    };
  }
  const path = keyFilePath(config.dataDir);
  return {
    records: () => readKeyFile(path).records,
    append: async (records) => appendKeyRecords(path, records),
    close: async () => {},
  };
}
