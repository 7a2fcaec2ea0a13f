export { RaftNode, type ProposeResult } from './raft.js';
export { ReadyPlanner, type ReadyPlan, type ReadyWrite } from './ready-plan.js';
export { encodeConfChange, decodeConfChange } from './confchange.js';
export type * from './types.js';
