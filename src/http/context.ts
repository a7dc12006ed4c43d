// What route modules need from the server, passed explicitly (no globals).
import type { Engine } from '../../engine/engine';
import type { EmbeddingConfig } from '../../engine/records';
import type { Config } from '../config';
import type { Logger } from '../logger';
import type { Metrics } from './metrics';
import type { SnapshotStatus } from '../services/snapshots';
import type { KbType } from '../services/kb-types';

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
  metrics: Metrics;
  /** Service version (package.json), shown in the API docs. */
  version: string;
}

export const ORG_HEADER = 'x-service-organization-id';
export const KEY_HEADER = 'x-service-api-key';

import { Elysia } from 'elysia';

/**
 * The authenticated organization of a request. Credentials are verified earlier, in the app's
 * onRequest hook (before body parsing, so a bad credential is a 401 whatever the body holds).
 */
export const orgContext = new Elysia({ name: 'org-context' }).derive({ as: 'global' }, ({ request }) => ({
  org: request.headers.get(ORG_HEADER) ?? '',
}));
