// The one place the deployment mode is chosen: a cluster node when the options say so, else a
// single node.
import type { JobRoom } from '../ingest/jetstream-jobs';
import type { EngineOptions } from '../options';
import { ClusterNode } from './cluster-node';
import { LocalNode } from './local-node';
import type { Node, NodeContext } from './node';

export type { Node, Route } from './node';

/**
 * Open this node's log after `afterSeq` (the starting snapshot's position), replaying or following
 * it into the state. `room`: how many indexing jobs this node can take (cluster mode).
 */
export function openNode(options: EngineOptions, room: JobRoom, ctx: NodeContext, afterSeq?: number): Promise<Node> {
  return options.cluster ? ClusterNode.open({ ...options.cluster, room }, ctx, afterSeq) : LocalNode.open(options, ctx, afterSeq);
}
