// What a config reload (SIGHUP, `systemctl reload`) may change while the node runs, and what
// it may not. Reloaded: the cluster secrets, the client tokens, and the certificate files of
// both ports (their paths and contents). Everything else that concerns this node is what it
// was built with (its addresses and data directory, Raft timing, limits, TLS or auth turned
// on or off, requireClientCert); a change to it is reported and takes effect at the next start.
// The other nodes' entries in `nodes` are not read by a running node (membership comes from
// the log), so they may change freely. docs/operations.md, "Reloading the config".
import type { Logger } from 'pino';
import type { ClusterConfig, NodeConfig, TlsFilesConfig } from '../config/cluster-config.js';
import { nodeById } from '../config/cluster-config.js';
import type { NodeClock } from './clock.js';

/** Settings of `next` that differ from the ones the node runs with and cannot change while it
 *  runs, by their config keys. */
export function restartOnlyChanges(running: ClusterConfig, next: ClusterConfig, id: string): string[] {
  const differs = (a: unknown, b: unknown): boolean => JSON.stringify(a) !== JSON.stringify(b);
  const out: string[] = [];
  if (running.clusterId !== next.clusterId) out.push('clusterId');
  const self = (c: ClusterConfig): NodeConfig | undefined => c.nodes.find((n) => n.id === id);
  if (differs(self(running), self(next))) out.push(`nodes (${id}'s entry)`);
  for (const key of ['raft', 'sessions', 'snapshot', 'ledger', 'budgets', 'txn', 'watch', 'limits'] as const) {
    if (differs(running[key], next[key])) out.push(key);
  }
  if ((running.auth === null) !== (next.auth === null)) out.push(next.auth === null ? 'auth (turned off)' : 'auth (turned on)');
  for (const port of ['peer', 'client'] as const) {
    const [a, b] = [running.tls[port], next.tls[port]];
    if ((a === null) !== (b === null)) out.push(`tls.${port} (turned ${b === null ? 'off' : 'on'})`);
    else if (a && b && a.requireClientCert !== b.requireClientCert) out.push(`tls.${port}.requireClientCert`);
  }
  return out;
}

/** `next`'s files for a port, with the setting a reload cannot change kept as it runs. */
export function reloadableTls(running: TlsFilesConfig | null, next: TlsFilesConfig | null): TlsFilesConfig | null {
  if (running === null || next === null) return running;
  return { ...next, requireClientCert: running.requireClientCert };
}

/** The config a node runs with after a reload: what it started with, but for what reloads. */
export function reloadedConfig(running: ClusterConfig, next: ClusterConfig): ClusterConfig {
  return {
    ...running,
    secrets: next.secrets,
    auth: (running.auth === null) === (next.auth === null) ? next.auth : running.auth,
    tls: { peer: reloadableTls(running.tls.peer, next.tls.peer), client: reloadableTls(running.tls.client, next.tls.client) },
  };
}

export interface ReloadTarget {
  readonly id: string;
  /** The config the node runs with. */
  running(): ClusterConfig;
  /** Puts `next` (already reduced to what reloads) in place and says what changed. Throws,
   *  having changed nothing, when a part of it cannot be used (a certificate file). */
  apply(next: ClusterConfig): string[];
}

/**
 * One node's reloads: each reads the file again and applies what may change, all of it or
 * none. The outcome is logged, and what needs an operator (a reload refused, settings that
 * wait for a restart) stays among the node's warnings (status, /readyz) until a later reload
 * clears it.
 */
export class ConfigReloads {
  private failure: string | null = null;
  private waiting: readonly string[] = [];
  private count = 0;

  constructor(
    private readonly target: ReloadTarget,
    private readonly log: Logger,
    private readonly clock: NodeClock,
  ) {}

  /** Reloads successfully applied since the node started. */
  get reloads(): number {
    return this.count;
  }

  /** Reads the config with `load` (which throws on a bad file) and applies it. */
  reload(load: () => ClusterConfig): boolean {
    let changed: string[];
    let waiting: string[];
    try {
      const next = load();
      nodeById(next, this.target.id);
      const running = this.target.running();
      waiting = restartOnlyChanges(running, next, this.target.id);
      changed = this.target.apply(reloadedConfig(running, next));
    } catch (err) {
      const at = new Date(this.clock.wall()).toISOString();
      this.failure = `the config reload at ${at} was refused, and the node runs the config it had: ${(err as Error).message}`;
      this.log.error({ reason: (err as Error).message }, 'config reload refused; nothing changed');
      return false;
    }
    this.failure = null;
    this.waiting = waiting;
    this.count += 1;
    this.log.info({ changed, restartToApply: this.waiting, reloads: this.count }, changed.length > 0 ? 'config reloaded' : 'config reloaded; nothing to change');
    if (this.waiting.length > 0) this.log.warn({ keys: this.waiting }, 'the config file changes settings that cannot change while the node runs; they take effect when it restarts');
    return true;
  }

  notes(): string[] {
    const out: string[] = [];
    if (this.failure !== null) out.push(this.failure);
    if (this.waiting.length > 0) out.push(`the config file changes ${this.waiting.join(', ')}, which cannot change while the node runs: restart it to apply them`);
    return out;
  }
}
