export { RaftNode, type ProposeResult } from './raft.js';
export { encodeConfChange, decodeConfChange } from './confchange.js';
export type * from './types.js';
