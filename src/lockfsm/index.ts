// The pure lock state machine the Raft log replicates. See docs/lockfsm.md.

export { LockMachine } from './machine.js';
export { DEFAULT_MACHINE_CONFIG, checkMachineConfig, type MachineConfig } from './config.js';
export { encodeCommand, decodeCommand } from './codec.js';
export { validateCommand, COMMAND_TYPES } from './validate.js';
export { BUSY_HOLDERS_SHOWN } from './locks.js';
export { SnapshotError } from './snapshot-reader.js';
export { SNAPSHOT_FORMAT, SNAPSHOT_VERSION, SnapshotEncoder } from './snapshot.js';
export { isMachineError } from './errors.js';
export type * from './types.js';
