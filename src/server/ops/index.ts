// Operability of a node: metrics, health checks, the status page and its API.
export { NodeOps, type NodeOpsOptions } from './node-ops.js';
export type { NodeInternals, NodeStatusJson, LockRow, ElectionRow, Page } from './node-view.js';
export type { ClusterJson, ClusterNodeJson } from './cluster-view.js';
export type { RecentEvent } from './recent-events.js';
