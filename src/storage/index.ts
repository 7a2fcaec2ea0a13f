export { StorageError } from './errors.js';
export { COMPACT_CHUNK, RaftStorage, type LoadedState, type StorageStats } from './raft-storage.js';
export type { Identity } from './records.js';
