// One seeded run of the Raft simulator with the real lock machine on every node and the
// lock workload as its clients (see lock-workload.ts and lock-check.ts). At the end, once
// faults have stopped and the cluster has caught up, every live node's machine must equal,
// byte for byte, a machine that applied the committed log from the first entry.
import type { NodeId, RaftNode } from '../../src/raft/index.js';
import { CommandProposer } from '../../src/server/replication/command-proposer.js';
import { Sim, type SimMachine, type SimOptions, type SimResult } from './cluster.js';
import { LockCheck, LockNodeMachine, type LockCheckStats } from './lock-check.js';
import { LOCK_SIM_CONFIG, LockClients } from './lock-workload.js';

export interface LockSimResult extends SimResult, LockCheckStats {
  /** Commands the clients proposed, and how many of those were re-sent (same session, seq). */
  proposed: number;
  retriesSent: number;
  /** Live nodes compared at the end, and how many distinct applied indexes they were at. */
  liveAtEnd: number;
  endIndexes: number;
}

export type LockSimOptions = Omit<SimOptions, 'payload' | 'machine' | 'beforePropose'> & {
  /** A leader seeds the cluster's settings from its own file before it proposes, through
   *  the server's CommandProposer (default true; false shows what the seed prevents). */
  seedSettings?: boolean;
};

/** `makeCheck` swaps in another LockCheck (the tests of the checks themselves). */
export function runLockSeed(
  opts: LockSimOptions,
  makeCheck: (clients: LockClients) => LockCheck = (clients) => new LockCheck(LOCK_SIM_CONFIG, clients),
): LockSimResult {
  const clients = new LockClients(LOCK_SIM_CONFIG);
  const check = makeCheck(clients);
  // One proposer per incarnation of a node's Raft core: a restarted node remembers nothing.
  const proposers = new WeakMap<RaftNode, CommandProposer>();
  const beforePropose = (node: NodeId, raft: RaftNode, sm: SimMachine): void => {
    if (!(sm instanceof LockNodeMachine)) return;
    let p = proposers.get(raft);
    if (p === undefined) proposers.set(raft, (p = new CommandProposer(() => raft, () => sm.m, check.nodeConfig(node), () => {})));
    p.seedIfNeeded();
  };
  const { seedSettings = true, ...simOpts } = opts;
  const sim = new Sim({ ...simOpts, payload: (rng) => clients.next(rng), machine: check.machines(), ...(seedSettings ? { beforePropose } : {}) });
  check.fail = (msg) => sim.check.fail(msg);
  const r = sim.run();
  let liveAtEnd = 0;
  const indexes = new Set<number>();
  if (!r.violation) {
    try {
      const byIndex = new Map<number, { node: string; bytes: Uint8Array }>();
      for (const n of sim.nodes.values()) {
        if (n.state !== 'up' || !(n.sm instanceof LockNodeMachine)) continue;
        liveAtEnd++;
        const bytes = n.sm.m.snapshot();
        indexes.add(n.sm.index);
        const same = byIndex.get(n.sm.index);
        if (same && Buffer.compare(same.bytes, bytes) !== 0) sim.check.fail(`At the end: ${n.id} and ${same.node} differ at ${n.sm.index}`);
        byIndex.set(n.sm.index, { node: n.id, bytes });
        check.compareSnapshot(n.id, n.sm.index, bytes, 'at the end');
      }
      check.flush();
    } catch (err) {
      r.violation = err instanceof Error ? err.message : String(err);
    }
  }
  return {
    ...r,
    ...check.stats,
    proposed: clients.proposed,
    retriesSent: clients.retries,
    liveAtEnd,
    endIndexes: indexes.size,
  };
}

export function lockReplayCommand(r: Pick<SimResult, 'seed' | 'nodes'>, steps: number): string {
  return `LOCK_SIM_SEED=${r.seed} LOCK_SIM_NODES=${r.nodes} LOCK_SIM_STEPS=${steps} node --import tsx test/sim/lockfsm-sim.test.ts`;
}
