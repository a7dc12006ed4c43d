// What route modules need from the server, passed explicitly (no globals).
import type { Engine, EmbeddingConfig } from '../../engine';
import type { Config } from '../config';
import type { Logger } from '../logger';
import type { Metrics } from './metrics';
import type { SnapshotStatus } from '../../snapshots';
import type { KbType } from '../kb-types';

export interface ServerContext {
  config: Config;
  logger: Logger;
  /** Undefined until recovery finishes; routes answer 503 NOT_READY meanwhile. */
  engine: () => Engine | undefined;
  /** Why the server is not ready yet (empty once it is). */
  notReady: () => string[];
  snapshotStatus: () => SnapshotStatus | undefined;
  /** The embedding configuration each type gets at creation. */
  embeddings: Record<KbType, EmbeddingConfig>;
  /** Said at start-up and in /ready: high-quality types served by USE-Lite. */
  modelWarnings: string[];
  metrics: Metrics;
  /** Service version (package.json), shown in the API docs. */
  version: string;
}
