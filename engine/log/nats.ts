// What the JetStream log and the JetStream job queue share: how a node connects to NATS, makes sure
// its stream exists, and publishes so that a retry after a lost acknowledgement is stored once.
import { jetstreamManager, JetStreamApiCodes, JetStreamApiError, type JetStreamClient, type JetStreamManager, type PubAck, type StreamConfig } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';

/** A connection that reconnects for as long as the node runs (NATS servers restart, leaders move). */
export function connectNats(servers: string[]): Promise<NatsConnection> {
  return connect({ servers, maxReconnectAttempts: -1, reconnectTimeWait: 250 });
}

/**
 * The JetStream manager, once JetStream answers, and the stream, made when absent. Tried again
 * for `waitMs` while the servers have no JetStream leader yet (a cluster starting up or electing
 * one): a node started together with its NATS servers waits instead of failing.
 */
export async function ensureStream(nc: NatsConnection, config: Partial<StreamConfig> & { name: string }, waitMs = 30_000): Promise<JetStreamManager> {
  const deadline = Date.now() + waitMs;
  for (let attempt = 1; ; attempt++) {
    try {
      const jsm = await jetstreamManager(nc);
      try {
        await jsm.streams.info(config.name);
      } catch (err) {
        if (!(err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound)) throw err;
        await jsm.streams.add(config);
      }
      return jsm;
    } catch (err) {
      if (Date.now() >= deadline) throw new Error(`JetStream is not available for stream ${config.name}: ${String(err)}`);
      await Bun.sleep(Math.min(1000, 100 * attempt));
    }
  }
}

/**
 * Publish with one message id on every attempt (JetStream stores it once within the stream's
 * duplicate window), tried again while a leader is being elected or NATS is out of reach.
 */
export async function publishRetried(js: JetStreamClient, subject: string, payload: Uint8Array | string, msgID: string, attempts = 20): Promise<PubAck> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await js.publish(subject, payload, { msgID, timeout: 2000 });
    } catch (err) {
      if (attempt >= attempts) throw new Error(`not stored in JetStream after ${attempts} attempts: ${String(err)}`);
      await Bun.sleep(Math.min(2000, 100 * attempt));
    }
  }
}
