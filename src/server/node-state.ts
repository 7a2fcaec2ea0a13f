// What a node reads from its storage before it is built (PalisadeNode.open): the log and
// snapshot, the lock machine and members they hold, and the peers to dial. A founding member
// of a new cluster writes the founding membership first; a node started with --join asks the
// cluster to add it.
import { LockMachine } from '../lockfsm/index.js';
import type { NodeId } from '../raft/index.js';
import { nodeById } from '../config/cluster-config.js';
import { machineConfigFrom } from '../config/defaults.js';
import type { NodeStore } from '../storage/node-store.js';
import type { LoadedState } from '../storage/raft-storage.js';
import { MemberDirectory, bootstrapEntries, unwrapSnapshot } from '../storage/members.js';
import type { NodeDeps } from './node-deps.js';
import type { NodeOptions } from './node-deps.js';

/** What open() reads and decides before the node is built. */
export interface Opened {
  readonly store: NodeStore;
  readonly state: LoadedState;
  readonly machine: LockMachine;
  readonly members: MemberDirectory;
  readonly peers: ReadonlyMap<NodeId, string>;
}

/** The node's storage opened and read: a founding member of a new cluster writes the founding
 *  membership; a node started with --join asks the cluster to add it. */
export async function openState(opts: NodeOptions, deps: NodeDeps): Promise<Opened> {
  const { config: cfg } = opts;
  const join = opts.join ?? [];
  const store = await deps.openStore();
  let state = await store.load();
  const emptyLog = !state.snapshot && state.entries.length === 0 && state.hardState.term === 0;
  if (emptyLog && join.length > 0) {
    await store.markJoining();
    deps.logger.info({ join }, 'joining a running cluster');
  }
  if (emptyLog && join.length === 0) {
    if (await store.isJoining()) {
      await store.close();
      throw new Error(
        `${nodeById(cfg, opts.id).dataDir} belongs to a node that was started to join a running cluster and has received no data yet: ` +
          'start it with --join again (without it, it would found a second cluster of its own)',
      );
    }
    // A founding member of a new cluster: the log starts with the founding membership.
    const entries = bootstrapEntries(cfg.nodes);
    const hardState = { term: 1, vote: null, commit: entries.length };
    await store.save({ hardState, entries });
    state = { ...state, hardState, entries };
  }
  const fileSettings = machineConfigFrom(cfg);
  const snap = state.snapshot ? unwrapSnapshot(state.snapshot.data) : null;
  const machine = snap ? LockMachine.restore(snap.machine, fileSettings) : new LockMachine(fileSettings);
  const members = new MemberDirectory(snap?.members ?? cfg.nodes.map((n) => [n.id, { peerUrl: n.peerUrl, clientUrl: n.clientUrl }] as const), snap?.removed);
  // Peers to dial at start: the members we know; a joining node asks the cluster.
  if (join.length > 0 && state.entries.length === 0 && !state.snapshot) {
    const list = await deps.join(join);
    for (const m of list) members.set(m.id, { peerUrl: m.peerUrl, clientUrl: m.clientUrl });
    return { store, state, machine, members, peers: new Map(list.filter((m) => m.id !== opts.id).map((m) => [m.id, m.peerUrl])) };
  }
  const peers = new Map<NodeId, string>();
  for (const [id, u] of members.entries()) if (id !== opts.id) peers.set(id, u.peerUrl);
  return { store, state, machine, members, peers };
}
