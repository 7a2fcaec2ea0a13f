// The server's defaults that the lock machine must share: the machine's bounds are derived
// from the cluster config here, in one place.
import { DEFAULT_MACHINE_CONFIG, type MachineConfig } from '../lockfsm/index.js';
import type { ClusterConfig } from './config.js';

/** The lock machine's bounds for this cluster: every node derives the same from the same file. */
export function machineConfigFrom(cfg: ClusterConfig): MachineConfig {
  return {
    ...DEFAULT_MACHINE_CONFIG,
    minTtlMs: cfg.sessions.minTtlMs,
    maxTtlMs: cfg.sessions.maxTtlMs,
    defaultLockDelayMs: cfg.sessions.lockDelayMs,
    maxSessions: cfg.sessions.maxSessions,
  };
}
