// One node's answer to `status`: its Raft state, what it applied, and its operator notes,
// with the driver's, storage's and transport's counters (palisade status --json shows them).
import type { NodeStatus } from '../../protocol/client-protocol.js';
import type { RaftNode } from '../../raft/index.js';

export interface StatusParts {
  readonly id: string;
  readonly raft: RaftNode;
  readonly appliedIndex: number;
  readonly warnings: string[];
  readonly digest: NodeStatus['stateDigest'] | null;
  /** Sessions this node keeps leases for (the leader: all of them). */
  readonly sessions: number;
  readonly driver: Record<string, number>;
  readonly transport: Record<string, number>;
}

export function nodeStatus(p: StatusParts): NodeStatus {
  const { raft } = p;
  return {
    id: p.id,
    role: raft.role === 'preCandidate' ? 'candidate' : raft.role,
    term: raft.term,
    leader: raft.leader,
    commitIndex: raft.log.committed,
    appliedIndex: p.appliedIndex,
    members: [...raft.confState.voters, ...raft.confState.learners],
    pid: process.pid,
    warnings: p.warnings,
    ...(p.digest ? { stateDigest: p.digest } : {}),
    lastIndex: raft.log.lastIndex(),
    snapshotIndex: raft.log.snapshotIndex,
    sessions: p.sessions,
    driver: p.driver,
    transport: p.transport,
  };
}
