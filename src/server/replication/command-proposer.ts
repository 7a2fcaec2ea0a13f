// The one way a leader proposes a lock-machine command (client writes, the leader's timers,
// checkpoints): encoded under the cluster's settings, and never before the settings.
//
// A cluster's settings are replicated state (src/lockfsm/config.ts). A cluster that has never
// been configured (a new one) gets its first values from its first leader's file: before that
// leader proposes any command it proposes `configure{initial}`, so in the log every command
// comes after the settings it is applied with, and nodes whose files disagree apply it alike.
// A leader that finds the machine still unconfigured proposes the seed once per term: a seed
// of an earlier term may sit in its log uncommitted, and a second seed applies as nothing.
import { encodeCommand, type Command, type LockMachine, type MachineConfig } from '../../lockfsm/index.js';
import type { ProposeResult, RaftNode } from '../../raft/index.js';

export class CommandProposer {
  private seededTerm = -1;

  constructor(
    private readonly raft: () => RaftNode,
    private readonly machine: () => LockMachine,
    /** The values this node's file gives: what it seeds a never-configured cluster with. */
    private readonly fileSettings: MachineConfig,
    /** Process the core's output soon. */
    private readonly kick: () => void,
  ) {}

  /** Propose `cmd` (already validated against the machine's settings, or the caller's own). */
  propose(cmd: Command): ProposeResult {
    const seeded = this.seedIfNeeded();
    if (seeded !== null && !seeded.ok) return seeded;
    const r = this.raft().propose(encodeCommand(cmd, this.machine().settings));
    this.kick();
    return r;
  }

  /** On becoming leader (and before every proposal): the seed, if this cluster has none yet.
   *  null when none was needed. */
  seedIfNeeded(): ProposeResult | null {
    const raft = this.raft();
    if (raft.role !== 'leader' || this.machine().configured || this.seededTerm === raft.term) return null;
    const r = raft.propose(encodeCommand({ type: 'configure', settings: this.fileSettings, initial: true }));
    if (r.ok) this.seededTerm = raft.term;
    this.kick();
    return r;
  }
}
