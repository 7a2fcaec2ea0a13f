// A deterministic simulated cluster of real RaftNodes: a virtual clock, a seeded PRNG, a
// network that delays, loses, duplicates, reorders and partitions messages, nodes that
// crash (losing whatever they had not persisted), restart from their durable store, pause
// and suffer clock jumps, snapshots sent in chunks, clients that propose and read, and an
// operator that changes membership. Every step is followed by the safety checks.
//
// Each node runs production's RaftDriver (src/server/replication/raft-driver.ts), with the simulator's
// clock, timers and an in-memory store injected at the driver's seams: the store is durable
// when save() returns and `soon` runs at once, so the driver carries out each Ready within
// the simulator's step, deterministically, by the very code (and ordering) production runs.
import { decodeConfChange, RaftNode, type ReadyPlan, type ReadyWrite } from '../../src/raft/index.js';
import type { ConfChange, ConfState, Entry, Message, NodeId, RaftConfig, Ready, Snapshot, SoftState } from '../../src/raft/index.js';
import { RaftDriver, type DriverHooks, type DriverTimers } from '../../src/server/replication/raft-driver.js';
import { Checker, Violation } from './checker.js';
import { EventHeap } from './heap.js';
import { Prng } from '../support/prng.js';
import { entryKey, StateMachine, Store } from './state.js';

/** Virtual milliseconds per tick. */
export const TICK_MS = 10;

export interface SimOptions {
  seed: number;
  /** Initial voters: 3 or 5. */
  nodes: number;
  /** Simulated steps (events) of the random, faulty phase. */
  steps: number;
  /** Print events (elections, partitions, crashes, commits) through `log`. */
  trace?: boolean;
  log?: (line: string) => void;
  /** Membership changes in this run (default: decided by the seed). */
  membership?: boolean;
  /** The bytes of each client proposal (default: a fresh id, `c<n>`). */
  payload?: (rng: Prng) => Uint8Array;
  /** The state machine each node runs (default: StateMachine, a hash of the applied entries). */
  machine?: SimMachines;
  /** Called on the node a client proposes to, before its proposals (a server's duties as
   *  leader: the lock simulator seeds the cluster's settings there, as the node does). */
  beforePropose?: (node: NodeId, raft: RaftNode, sm: SimMachine) => void;
  /** A deliberately wrong driver, to show the simulator catches it (see plantedOrdering). */
  plant?: PlantedBug;
  /** Storage faults: a restarted node may come back with a shorter log than it acknowledged
   *  or with no data at all. 'protected' models the server's checks (watermark, storage
   *  identity): such a node refuses to start. 'unprotected' lets it run on what is left, to
   *  show what the checks prevent. Default: none (and the seed's other choices unchanged). */
  storageFaults?: 'protected' | 'unprotected';
}

/** `acksBeforeWrite`: the driver sends every message before the Ready's write, votes and
 *  append acknowledgements included (a RaftDriver that ignores the ReadyPlanner's ordering). */
export type PlantedBug = 'acksBeforeWrite';

/** Production's driver with the planted bug: the same loop, every message sent first. */
class AcksBeforeWriteDriver extends RaftDriver {
  protected override plan(rd: Ready): ReadyPlan {
    const plan = super.plan(rd);
    if (plan.sendAfterWrite.length === 0) return plan;
    return { sendFirst: [...plan.sendFirst, ...plan.sendAfterWrite], write: plan.write, sendAfterWrite: [] };
  }
}

/** The driver logs only its own failure, which the simulator rethrows (fatal). */
const SILENT = { error: () => {} };

/** A node's replicated state machine, as the simulator drives and checks it. */
export interface SimMachine {
  /** Index of the last entry applied (or covered by the snapshot it was restored from). */
  readonly index: number;
  /** Every committed entry in order, conf changes and leaders' empty no-ops included. */
  apply(e: Entry): void;
  /** The state after `index`: equal on every node at the same index (State Machine Safety). */
  digest(): string;
  /** Snapshot data for compaction; `SimMachines.restore` reads it back. */
  serialize(): Uint8Array;
}

export interface SimMachines {
  create(node: NodeId): SimMachine;
  restore(node: NodeId, data: Uint8Array): SimMachine;
}

function hashMachine(sm: StateMachine): SimMachine {
  return {
    get index() {
      return sm.index;
    },
    apply: (e) => sm.apply(e.index, entryKey(e)),
    digest: () => sm.digest(),
    serialize: () => sm.serialize(),
  };
}

const HASH_MACHINES: SimMachines = {
  create: () => hashMachine(new StateMachine()),
  restore: (_node, data) => hashMachine(StateMachine.restore(data)),
};

export interface SimResult {
  seed: number;
  nodes: number;
  violation: string | null;
  steps: number;
  /** Ticks from the start until the first leader committed its no-op. */
  coldElectTicks: number | null;
  /** Ticks from the end of faults until a leader committed an entry of its term. */
  calmElectTicks: number | null;
  /** Ticks from the end of faults until a fresh proposal committed. */
  calmCommitTicks: number | null;
  proposalsCommitted: number;
  readsServed: number;
  readsDropped: number;
  elections: number;
  crashes: number;
  snapshotsSent: number;
  snapshotsInstalled: number;
  confChanges: number;
  virtualTicks: number;
  /** Nodes restarted on a damaged store (storageFaults), and how many refused to start. */
  storageFaults: number;
  refusedStarts: number;
}

type NodeState = 'up' | 'down' | 'paused' | 'off' | 'refused';
type CrashPoint = 'beforePersist' | 'afterPersist' | 'afterSend';

class SimNode {
  readonly store = new Store();
  raft: RaftNode | null = null;
  /** Production's driver over `raft`; null while the node is down. */
  driver: RaftDriver | null = null;
  /** The driver's tick (what its timer would call every TICK_MS). */
  tickFn: (() => void) | null = null;
  /** Readys processed since the simulator last kicked this node's driver. */
  rounds = 0;
  state: NodeState = 'down';
  /** Set by Sim.start before the node runs. */
  sm!: SimMachine;
  /** Messages that arrived while paused, delivered on resume. */
  held: Message[] = [];
  /** Ticks missed while paused (delivered at once on resume: a clock jump). */
  missedTicks = 0;
  crashAt: CrashPoint | null = null;
  lastCommit = 0;
  incarnation = 0;
  prevRole = '';
  constructor(
    readonly id: NodeId,
    readonly rng: Prng,
  ) {}
}

type Ev =
  | { time: number; seq: number; kind: 'tick'; node: NodeId }
  | { time: number; seq: number; kind: 'deliver'; msg: Message; sent: number }
  | { time: number; seq: number; kind: 'fault' }
  | { time: number; seq: number; kind: 'client' }
  | { time: number; seq: number; kind: 'operator' }
  | { time: number; seq: number; kind: 'call'; what: string; fn: () => void };

type Mutable<T> = { -readonly [K in keyof T]: T[K] };
type EvBody = Ev extends infer E ? (E extends Ev ? Omit<E, 'time' | 'seq'> : never) : never;

interface Pending {
  id: string;
  start: number;
}

interface PendingRead {
  node: NodeId;
  committedAtStart: number;
  start: number;
}

const enc = new TextEncoder();
/** The longest delay of a calm network (virtual ms). */
const CALM_DELAY = 4;
/** Client proposals outstanding at most. */
const MAX_PENDING = 40;

type Fault = 'partition' | 'heal' | 'loss' | 'dup' | 'delay' | 'crash' | 'pause' | 'jump';
/** The mix of faults for each profile (picked uniformly from the list). */
const FAULTS: Record<Sim['profile'], readonly Fault[]> = {
  mixed: ['partition', 'partition', 'partition', 'heal', 'loss', 'dup', 'delay', 'crash', 'crash', 'pause', 'jump'],
  leaderKiller: ['crash', 'crash', 'crash', 'crash', 'loss', 'delay', 'partition', 'heal', 'pause'],
  flaky: ['loss', 'loss', 'dup', 'dup', 'delay', 'delay', 'partition', 'heal', 'crash', 'pause', 'jump'],
  partitions: ['partition', 'partition', 'partition', 'partition', 'heal', 'delay', 'loss', 'crash', 'pause'],
};

export class Sim {
  readonly rng: Prng;
  readonly electionTicks: number;
  readonly heartbeatTicks: number;
  readonly raftCfg: Omit<RaftConfig, 'id' | 'random'>;
  readonly bootstrap: ConfState;
  readonly nodes = new Map<NodeId, SimNode>();
  readonly check: Checker;
  private readonly machines: SimMachines;
  private readonly events = new EventHeap<Ev>();
  private seq = 0;
  now = 0;
  steps = 0;
  private faultPhase = true;
  /** When faults stopped. */
  private calmSince: number | null = null;
  /** What kind of trouble this run gets. */
  readonly profile: 'mixed' | 'leaderKiller' | 'flaky' | 'partitions';
  private readonly trace: ((s: string) => void) | null;
  private readonly plant: PlantedBug | undefined;

  // network
  private readonly blocked = new Set<string>(); // "a>b"
  private partitionId = 0;
  private loss = 0;
  private dup = 0;
  private delayMode: 'calm' | 'jitter' | 'reorder' = 'calm';
  /** Per-link delay multipliers. */
  private readonly slowLinks = new Map<string, number>();

  // clients
  private nextId = 0;
  private clientGuess: NodeId | null = null;
  private readonly pending = new Map<string, Pending>(); // "node:index"
  private readonly reads = new Map<string, PendingRead>();

  // membership operator
  readonly membership: boolean;
  private nextNodeNo: number;
  private opMode: 'idle' | 'adding' | 'promoting' | 'removing' = 'idle';
  private opTarget: NodeId | null = null;
  private opCycles = 0;

  // results
  readonly result: SimResult;
  /** Storage-fault choices draw from their own stream, so that a run in which no store is
   *  damaged is the very run the seed gives without storage faults. */
  private readonly storageRng: Prng;

  constructor(readonly opts: SimOptions) {
    this.rng = new Prng(opts.seed);
    this.plant = opts.plant;
    this.storageRng = new Prng(opts.seed ^ 0x5707a6e);
    this.machines = opts.machine ?? HASH_MACHINES;
    const r = this.rng;
    this.electionTicks = 10;
    this.heartbeatTicks = r.pick([1, 2, 3]);
    this.raftCfg = {
      heartbeatTicks: this.heartbeatTicks,
      electionTicks: this.electionTicks,
      // The server always runs with both; the core must stay safe without them too.
      preVote: !r.chance(0.12),
      checkQuorum: !r.chance(0.12),
      maxMsgBytes: r.pick([1, 64, 128, 256, 1024]), // 1: one entry per message
      maxInflight: r.pick([1, 2, 4, 8]),
      snapshotChunkBytes: r.pick([24, 64, 128, 512]),
    };
    this.membership = opts.membership ?? r.chance(0.4);
    this.profile = r.pick(['mixed', 'mixed', 'mixed', 'leaderKiller', 'flaky', 'partitions'] as const);
    const ids = Array.from({ length: opts.nodes }, (_, i) => `n${i + 1}`);
    this.nextNodeNo = opts.nodes + 1;
    this.bootstrap = { voters: ids, learners: [] };
    this.trace = opts.trace ? (opts.log ?? ((s: string) => console.log(s))) : null;
    this.check = new Checker(() => `seed ${opts.seed}, step ${this.steps}, t=${this.ticksNow().toFixed(1)} ticks`);
    this.result = {
      seed: opts.seed,
      nodes: opts.nodes,
      violation: null,
      steps: 0,
      coldElectTicks: null,
      calmElectTicks: null,
      calmCommitTicks: null,
      proposalsCommitted: 0,
      readsServed: 0,
      readsDropped: 0,
      elections: 0,
      crashes: 0,
      snapshotsSent: 0,
      snapshotsInstalled: 0,
      confChanges: 0,
      virtualTicks: 0,
      storageFaults: 0,
      refusedStarts: 0,
    };
    for (const id of ids) this.addNode(id);
  }

  ticksNow(): number {
    return this.now / TICK_MS;
  }

  private log(s: string): void {
    if (this.trace) this.trace(`[${this.ticksNow().toFixed(1).padStart(7)}] ${s}`);
  }

  private at(delay: number, body: EvBody): void {
    const ev = body as Mutable<Ev>;
    ev.time = this.now + delay;
    ev.seq = this.seq++;
    this.events.push(ev as Ev);
  }

  private call(delay: number, what: string, fn: () => void): void {
    this.at(delay, { kind: 'call', what, fn });
  }

  private addNode(id: NodeId): SimNode {
    const n = new SimNode(id, this.rng.fork());
    this.nodes.set(id, n);
    this.start(n);
    // Each node ticks on its own phase, so that nodes do not move in lockstep.
    this.at(1 + this.rng.int(TICK_MS), { kind: 'tick', node: id });
    return n;
  }

  // ---- node life cycle --------------------------------------------------------------

  /** Build the node from its durable store alone (a fresh node has an empty store). */
  private start(n: SimNode): void {
    const s = n.store;
    const rng = n.rng.fork();
    n.raft = new RaftNode(
      { ...this.raftCfg, id: n.id, random: (k) => rng.int(k) },
      {
        hardState: s.hardState,
        conf: this.bootstrap,
        ...(s.snapshot ? { snapshot: s.snapshot } : {}),
        entries: [...s.entries],
        applied: s.snapshotIndex,
      },
    );
    n.sm = s.snapshot ? this.machines.restore(n.id, s.snapshot.data) : this.machines.create(n.id);
    if (s.snapshot) {
      if (n.sm.index !== s.snapshot.meta.index) this.check.fail(`${n.id}: snapshot data at ${n.sm.index} but meta at ${s.snapshot.meta.index}`);
      this.check.checkState(n.id, n.sm.index, n.sm.digest(), 'restart from its snapshot');
    }
    n.state = 'up';
    n.held = [];
    n.missedTicks = 0;
    n.crashAt = null;
    n.lastCommit = n.raft.log.committed;
    n.incarnation++;
    n.prevRole = n.raft.role;
    n.driver = this.newDriver(n, n.raft);
    n.driver.start();
    this.afterDrive(n);
  }

  private crash(n: SimNode, why: string): void {
    if (n.state === 'down' || n.state === 'off') return;
    this.log(`CRASH ${n.id} (${why}); store: term ${n.store.hardState.term}, last ${n.store.lastIndex()}, commit ${n.store.hardState.commit}`);
    n.raft = null;
    n.driver = null;
    n.tickFn = null;
    n.state = 'down';
    n.held = [];
    n.crashAt = null;
    this.result.crashes++;
  }

  private restart(n: SimNode): void {
    if (n.state !== 'down') return;
    if (this.opts.storageFaults && this.faultPhase && this.damageStore(n)) return;
    this.log(`RESTART ${n.id} from store: term ${n.store.hardState.term}, vote ${n.store.hardState.vote}, snapshot ${n.store.snapshotIndex}, last ${n.store.lastIndex()}`);
    this.start(n);
  }

  /**
   * Maybe damage a crashed node's store before it restarts: at most one node per run, and
   * only in runs without membership changes (so that one node refusing to start still
   * leaves a majority of the one configuration). Returns true when the node refused.
   */
  private damageStore(n: SimNode): boolean {
    const r = this.storageRng;
    if (this.membership || this.result.storageFaults > 0 || !r.chance(0.25)) return false;
    const st = n.store;
    const watermark = st.watermark;
    let what: string;
    let detected: boolean;
    if (r.chance(0.5) || st.lastIndex() <= st.snapshotIndex) {
      // A lost disk: no log, no hard state, no snapshot, no watermark. The server finds it
      // through its storage identity (the peers know the one this node voted with).
      n.store.hardState = { term: 0, vote: null, commit: 0 };
      n.store.snapshot = null;
      n.store.entries = [];
      n.store.watermark = 0;
      what = `wiped (had last ${watermark})`;
      detected = true;
    } else {
      // A truncated log: a random part of its tail is gone; hard state and watermark stay.
      const keep = r.int(st.entries.length);
      st.entries.length = keep;
      st.hardState = { ...st.hardState, commit: Math.min(st.hardState.commit, st.lastIndex()) };
      what = `log truncated to ${st.lastIndex()} (acknowledged ${watermark})`;
      detected = st.lastIndex() < st.watermark;
    }
    this.result.storageFaults++;
    if (this.opts.storageFaults === 'protected' && detected) {
      this.log(`STORAGE ${n.id} ${what}: refuses to start`);
      this.result.refusedStarts++;
      n.state = 'refused';
      return true;
    }
    this.log(`STORAGE ${n.id} ${what}: starts on what is left`);
    return false;
  }

  private pause(n: SimNode, ticks: number): void {
    if (n.state !== 'up') return;
    this.log(`PAUSE ${n.id} for ${ticks} ticks`);
    n.state = 'paused';
    const inc = n.incarnation;
    this.call(ticks * TICK_MS, `resume ${n.id}`, () => {
      if (n.incarnation === inc) this.resume(n, this.rng.chance(0.7));
    });
  }

  private resume(n: SimNode, jump: boolean): void {
    if (n.state !== 'paused') return;
    if (n.raft?.role === 'leader' && this.faultPhase) {
      // Clients that were talking to it keep doing so: reads at a leader that may have
      // been deposed while it was stalled.
      for (let i = 0; i < 3; i++) this.call(this.rng.range(0, 2 * TICK_MS), `read at ${n.id}`, () => this.readAt(n));
    }
    n.state = 'up';
    const missed = n.missedTicks;
    n.missedTicks = 0;
    this.log(`RESUME ${n.id}${jump ? `, clock jumps ${missed} ticks` : ''}, ${n.held.length} queued messages`);
    if (jump) this.clockJump(n, missed);
    const held = n.held;
    n.held = [];
    for (const m of held) this.at(this.rng.range(0, 2), { kind: 'deliver', msg: m, sent: this.now });
  }

  /** The node's timer fires `k` times at once (a stalled process catching up). */
  private clockJump(n: SimNode, k: number): void {
    for (let i = 0; i < k && n.state === 'up'; i++) this.tickNode(n);
  }

  // ---- the driver: production's RaftDriver, at the simulator's seams ---------------

  /** A driver for this incarnation of the node. Once the node crashes, whatever the old
   *  driver still does (it may be inside a Ready) reaches nothing: a dead process sends
   *  nothing, writes nothing and applies nothing. A crash may fall between any two steps of
   *  a Ready (crashAt), so every seed checks the driver's ordering. */
  private newDriver(n: SimNode, r: RaftNode): RaftDriver {
    const inc = n.incarnation;
    const live = (): boolean => n.incarnation === inc && n.raft === r;
    /** The 'afterSend' crash: at the first step after the Ready's messages went out. */
    const afterSend = (): boolean => {
      if (live() && n.crashAt === 'afterSend') this.crash(n, 'after sending, before applying');
      return live();
    };
    const hooks: DriverHooks = {
      send: (msgs) => {
        if (live()) for (const m of msgs) this.send(m);
      },
      softState: (st) => {
        if (afterSend()) this.onSoftState(n, r, st);
      },
      installSnapshot: (snap) => {
        if (afterSend()) this.installSnapshot(n, snap);
      },
      apply: (entries) => {
        if (afterSend()) this.apply(n, r, entries);
      },
      readStates: (states, dropped) => {
        if (!afterSend()) return;
        for (const rs of states) this.onReadState(n, rs.index, rs.context);
        for (const c of dropped) this.onReadDropped(c);
      },
      afterAdvance: () => {
        if (!afterSend()) return;
        if (++n.rounds > 1000) this.check.fail(`${n.id}: Ready does not settle`);
        if (r.log.applied !== n.sm.index) this.check.fail(`${n.id}: raft applied ${r.log.applied}, state machine at ${n.sm.index}`);
        this.trackCommit(n);
      },
      paused: () => {},
      fatal: (err) => {
        throw err; // a Violation raised in a hook ends the run with it
      },
    };
    const timers: DriverTimers = {
      soon: (fn) => fn(),
      every: (_ms, fn) => {
        n.tickFn = fn; // the simulator's tick events call it, with drift and pauses
        return () => {
          if (n.tickFn === fn) n.tickFn = null;
        };
      },
    };
    const storage = { save: (w: ReadyWrite): void => this.persist(n, r, w, live) };
    const Driver = this.plant === 'acksBeforeWrite' ? AcksBeforeWriteDriver : RaftDriver;
    return new Driver(r, storage, hooks, TICK_MS, this.electionTicks * TICK_MS, SILENT, () => this.now, timers);
  }

  /** The driver's write: durable when this returns, unless the node dies around it. */
  private persist(n: SimNode, r: RaftNode, w: ReadyWrite, live: () => boolean): void {
    if (!live()) return;
    this.check.checkEntries(n.id, r, w.entries);
    if (n.crashAt === 'beforePersist') return this.crash(n, 'before persisting a Ready');
    if (r.role === 'leader' && w.entries.length && w.entries[0]!.index <= n.store.lastIndex()) {
      // Leader Append-Only, on disk: a leader's new entries never replace persisted ones.
      this.check.fail(`Leader Append-Only: leader ${n.id} (term ${r.term}) overwrites persisted entries from ${w.entries[0]!.index}`);
    }
    const err = n.store.persist(w);
    if (err) this.check.fail(`${n.id} storage contract: ${err}`);
    if (n.crashAt === 'afterPersist') this.crash(n, 'after persisting, before sending');
  }

  private apply(n: SimNode, r: RaftNode, entries: readonly Entry[]): void {
    for (const e of entries) {
      if (e.index !== n.sm.index + 1) this.check.fail(`${n.id}: applies ${e.index} after ${n.sm.index}`);
      n.sm.apply(e);
      this.check.checkApply(n.id, e, n.sm.digest());
      if (e.type === 'conf') this.applyConf(n, r, e.index, e.data);
      else this.onApplied(n, e.index, entryKey(e));
    }
  }

  /** Something changed in the node's core: its driver processes every Ready now. */
  private drive(n: SimNode): void {
    if (n.state !== 'up' || !n.driver) return;
    n.driver.kick();
    this.afterDrive(n);
  }

  /** One tick of the node's timer. */
  private tickNode(n: SimNode): void {
    if (n.state !== 'up' || !n.tickFn) return;
    n.tickFn();
    this.afterDrive(n);
  }

  private afterDrive(n: SimNode): void {
    n.rounds = 0;
    if (n.raft && n.state === 'up') {
      this.trackCommit(n);
      this.maybeCompact(n);
    }
  }

  private onSoftState(n: SimNode, r: RaftNode, s: SoftState): void {
    if (s.role === 'leader') {
      this.log(`LEADER ${n.id} term ${r.term} (last ${r.log.lastIndex()}, commit ${r.log.committed})`);
      if (this.faultPhase && this.profile === 'leaderKiller' && this.rng.chance(0.3)) {
        // A leader that dies early in its term: its no-op and the old entries it was
        // bringing followers up to date with are only partly out (Figure 8 territory).
        const inc = n.incarnation;
        const term = r.term;
        this.call(this.rng.range(1, 3 * TICK_MS), `crash new leader ${n.id}`, () => {
          if (n.incarnation !== inc || n.raft?.term !== term || n.state !== 'up') return;
          this.crash(n, 'early in its term');
          this.call(this.rng.range(1, 15) * TICK_MS, `restart ${n.id}`, () => {
            if (n.incarnation === inc) this.restart(n);
          });
        });
      }
    } else if (n.prevRole === 'leader') {
      this.log(`STEP DOWN ${n.id} term ${r.term} -> ${s.role}`);
    } else if (s.role === 'candidate' || s.role === 'preCandidate') {
      this.log(`CAMPAIGN ${n.id} ${s.role === 'preCandidate' ? 'pre-vote for' : 'term'} ${s.role === 'preCandidate' ? r.term + 1 : r.term} (last ${r.log.lastIndex()}/${r.log.lastTerm()})`);
    }
    n.prevRole = s.role;
    this.check.checkLeader(n.id, r);
  }

  private trackCommit(n: SimNode): void {
    const r = n.raft!;
    if (r.log.committed !== n.lastCommit) {
      if (r.log.committed < n.lastCommit) this.check.fail(`${n.id}: commit index went back ${n.lastCommit} -> ${r.log.committed}`);
      this.check.checkCommit(n.id, r, n.lastCommit, this.live());
      if (r.role === 'leader') this.log(`COMMIT ${n.id} term ${r.term}: ${n.lastCommit + 1}..${r.log.committed}`);
      n.lastCommit = r.log.committed;
    }
  }

  private installSnapshot(n: SimNode, snap: Snapshot): void {
    const sm = this.machines.restore(n.id, snap.data);
    if (sm.index !== snap.meta.index) this.check.fail(`${n.id}: snapshot data at ${sm.index} but meta at ${snap.meta.index}`);
    this.check.checkState(n.id, sm.index, sm.digest(), 'installing a snapshot');
    n.sm = sm;
    this.result.snapshotsInstalled++;
    this.log(`SNAPSHOT installed on ${n.id} at ${snap.meta.index} (term ${snap.meta.term}, ${snap.data.length} bytes, voters ${snap.meta.conf.voters.join(',')}${snap.meta.conf.learners.length ? ` learners ${snap.meta.conf.learners.join(',')}` : ''})`);
  }

  private maybeCompact(n: SimNode): void {
    const r = n.raft!;
    const since = r.log.applied - n.store.snapshotIndex;
    if (since < 8 || !this.rng.chance(0.02 + since / 400)) return;
    const keepTail = this.rng.pick([0, 0, 2, 10]);
    const snap = r.compact(r.log.applied, n.sm.serialize(), keepTail);
    n.store.compact(snap);
    this.log(`COMPACT ${n.id} at ${snap.meta.index} (keep ${keepTail})`);
  }

  private applyConf(n: SimNode, r: RaftNode, index: number, data: Uint8Array): void {
    const cc = decodeConfChange(data);
    const conf = r.applyConfChange(data);
    if (r.role === 'leader' || n.id === cc.node) {
      this.log(`CONF ${n.id} applied ${cc.type} ${cc.node} at ${index}: voters ${conf.voters.join(',')} learners ${conf.learners.join(',') || '-'}`);
    }
  }

  // ---- network ----------------------------------------------------------------------

  private delay(m: Message): number {
    const r = this.rng;
    if (r.chance(0.002)) return r.range(5, 25) * TICK_MS; // a straggler
    const slow = this.slowLinks.get(`${m.from}>${m.to}`) ?? 1;
    switch (this.delayMode) {
      case 'calm':
        return r.range(1, 4) * slow;
      case 'jitter':
        return r.range(1, 15) * slow;
      case 'reorder':
        return r.range(1, 40) * slow;
    }
  }

  private send(m: Message): void {
    if (m.type === 'snap' && m.snapshot?.offset === 0) this.result.snapshotsSent++;
    if (this.blocked.has(`${m.from}>${m.to}`)) return;
    if (this.loss > 0 && this.rng.chance(this.loss)) return;
    this.at(this.delay(m), { kind: 'deliver', msg: m, sent: this.now });
    if (this.dup > 0 && this.rng.chance(this.dup)) this.at(this.delay(m), { kind: 'deliver', msg: m, sent: this.now });
  }

  private deliver(m: Message): void {
    const n = this.nodes.get(m.to);
    if (!n) return;
    if (this.blocked.has(`${m.from}>${m.to}`)) return; // in flight when the link was cut
    if (n.state === 'paused') {
      n.held.push(m);
      return;
    }
    if (n.state !== 'up' || !n.raft) return;
    n.raft.step(m);
    this.drive(n);
  }

  private healNetwork(): void {
    if (this.blocked.size) this.log('HEAL all partitions');
    this.blocked.clear();
    this.partitionId++;
  }

  private cut(groups: NodeId[][], oneWay = false): void {
    // Block every link between different groups (or only from group 0 to the others).
    for (let a = 0; a < groups.length; a++) {
      for (let b = 0; b < groups.length; b++) {
        if (a === b || (oneWay && a !== 0)) continue;
        for (const x of groups[a]!) for (const y of groups[b]!) this.blocked.add(`${x}>${y}`);
      }
    }
  }

  // ---- faults -----------------------------------------------------------------------

  private memberIds(): NodeId[] {
    return [...this.nodes.values()].filter((n) => n.state !== 'off').map((n) => n.id);
  }

  private currentLeader(): SimNode | null {
    let best: SimNode | null = null;
    for (const n of this.nodes.values()) {
      if (n.state === 'up' && n.raft?.role === 'leader' && (!best || n.raft.term > best.raft!.term)) best = n;
    }
    return best;
  }

  private fault(): void {
    const r = this.rng;
    const ids = this.memberIds();
    const leader = this.currentLeader();
    const victim = (): SimNode => (leader && r.chance(0.5) ? leader : this.nodes.get(r.pick(ids))!);
    const kind = r.pick(FAULTS[this.profile]);
    switch (kind) {
      case 'partition': {
        this.healNetwork();
        const id = this.partitionId;
        const shuffled = r.shuffle(ids);
        const minority = r.range(1, Math.floor(ids.length / 2));
        const style = r.pick(['split', 'leader', 'oneway-out', 'oneway-in', 'bridge']);
        let desc: string;
        if (style === 'leader' && leader) {
          this.cut([[leader.id], ids.filter((x) => x !== leader.id)]);
          desc = `leader ${leader.id} isolated`;
        } else if (style === 'oneway-out' || style === 'oneway-in') {
          const x = leader && r.chance(0.5) ? leader.id : shuffled[0]!;
          const rest = ids.filter((y) => y !== x);
          if (style === 'oneway-out') this.cut([[x], rest], true);
          else this.cut([rest, [x]], true);
          desc = style === 'oneway-out' ? `one-way: ${x} cannot send` : `one-way: ${x} cannot receive`;
        } else if (style === 'bridge' && ids.length >= 3) {
          const bridge = shuffled[0]!;
          const rest = shuffled.slice(1);
          const half = Math.ceil(rest.length / 2);
          this.cut([rest.slice(0, half), rest.slice(half)]);
          desc = `bridge ${bridge} between ${rest.slice(0, half).join(',')} | ${rest.slice(half).join(',')}`;
        } else {
          const a = shuffled.slice(0, minority);
          this.cut([a, shuffled.slice(minority)]);
          desc = `split ${a.join(',')} | ${shuffled.slice(minority).join(',')}`;
        }
        this.log(`PARTITION ${desc}`);
        this.call(r.range(3, 60) * TICK_MS, 'heal', () => {
          if (this.partitionId === id) this.healNetwork();
        });
        return;
      }
      case 'heal':
        this.healNetwork();
        return;
      case 'loss':
        this.loss = r.pick([0, 0, 0.02, 0.1, 0.3]);
        this.log(`NETWORK loss ${this.loss}`);
        return;
      case 'dup':
        this.dup = r.pick([0, 0, 0.05, 0.2]);
        this.log(`NETWORK duplication ${this.dup}`);
        return;
      case 'delay':
        this.delayMode = r.pick(['calm', 'jitter', 'reorder'] as const);
        this.slowLinks.clear();
        if (r.chance(0.4)) {
          // Some links are much slower than others (another zone, a congested path).
          for (const a of ids) for (const b of ids) if (a !== b && r.chance(0.25)) this.slowLinks.set(`${a}>${b}`, r.range(3, 15));
        }
        this.log(`NETWORK delays ${this.delayMode}${this.slowLinks.size ? `, slow links ${[...this.slowLinks.keys()].join(' ')}` : ''}`);
        return;
      case 'crash': {
        const n = this.profile === 'leaderKiller' && leader && r.chance(0.8) ? leader : victim();
        if (n.state !== 'up' && n.state !== 'paused') return;
        const how = r.pick(['now', 'now', 'beforePersist', 'afterPersist', 'afterSend'] as const);
        if (how === 'now' || n.state === 'paused') this.crash(n, 'killed');
        else n.crashAt = how; // dies inside its next Ready
        const inc = n.incarnation;
        this.call((this.profile === 'leaderKiller' ? r.range(1, 15) : r.range(2, 50)) * TICK_MS, `restart ${n.id}`, () => {
          if (n.incarnation !== inc) return;
          if (n.state === 'up') n.crashAt = null; // it never reached that point
          else this.restart(n);
        });
        return;
      }
      case 'pause':
        this.pause(victim(), r.range(3, 40));
        return;
      case 'jump': {
        const n = victim();
        const k = r.range(1, 3 * this.electionTicks);
        this.log(`CLOCK JUMP ${n.id} +${k} ticks`);
        this.clockJump(n, k);
        return;
      }
    }
  }

  private stopFaults(): void {
    this.faultPhase = false;
    this.calmSince = this.now;
    this.healNetwork();
    this.loss = 0;
    this.dup = 0;
    this.delayMode = 'calm';
    this.slowLinks.clear();
    // Liveness must hold with a majority, not only with everyone: in some runs a minority
    // of voters stays down for good (a minority in every configuration a live node holds).
    const refused = [...this.nodes.values()].some((n) => n.state === 'refused');
    const downForGood = this.rng.chance(0.3) && !refused ? this.pickMinority() : new Set<NodeId>();
    for (const n of this.nodes.values()) {
      n.crashAt = null;
      if (downForGood.has(n.id)) this.crash(n, 'for good');
      else if (n.state === 'down') this.restart(n);
      else if (n.state === 'paused') this.resume(n, false);
    }
    this.log(`FAULTS STOP: network calm, every node up${downForGood.size ? ` but ${[...downForGood].join(',')} (down for good)` : ''}`);
  }

  private pickMinority(): Set<NodeId> {
    // Only when membership is settled: a change still in some log could turn the chosen
    // minority into half of the configuration it leads to.
    let maxApplied = 0;
    for (const n of this.nodes.values()) if (n.raft) maxApplied = Math.max(maxApplied, n.raft.log.applied);
    for (const n of this.nodes.values()) {
      if (n.state !== 'off' && n.store.entries.some((e) => e.type === 'conf' && e.index > maxApplied)) return new Set();
    }
    const confs = [...this.nodes.values()].flatMap((n) => (n.raft && n.state !== 'off' ? [n.raft.confState] : []));
    const all = [...new Set(confs.flatMap((c) => c.voters))];
    const down = new Set<NodeId>();
    for (const id of this.rng.shuffle(all)) {
      down.add(id);
      const ok = confs.every((c) => c.voters.filter((v) => !down.has(v)).length >= Math.floor(c.voters.length / 2) + 1);
      if (!ok || this.rng.chance(0.4)) {
        if (!ok) down.delete(id);
        break;
      }
    }
    return down;
  }

  // ---- clients ----------------------------------------------------------------------

  private clientTarget(): SimNode | null {
    const up = [...this.nodes.values()].filter((n) => n.state === 'up');
    if (up.length === 0) return null;
    const g = this.clientGuess ? this.nodes.get(this.clientGuess) : undefined;
    if (g && g.state === 'up') return g;
    const n = this.rng.pick(up);
    this.clientGuess = n.id;
    return n;
  }

  private client(): void {
    const n = this.clientTarget();
    if (!n || !n.raft) return;
    const r = n.raft;
    const x = this.rng.float();
    // Clients give up on a proposal after a while, and keep a bounded number outstanding
    // (as a real client or server would): a leader cut off in a minority does not pile up
    // an unbounded uncommitted tail.
    for (const [k, p] of this.pending) {
      if (this.now - p.start > 3 * this.electionTicks * TICK_MS) {
        this.pending.delete(k);
        // A timed-out proposal: that node may not be a working leader; try another.
        if (k.startsWith(`${this.clientGuess}:`)) this.clientGuess = null;
      }
    }
    if (x < 0.8 && this.pending.size < MAX_PENDING) {
      this.opts.beforePropose?.(n.id, r, n.sm);
      // A few clients at once: several proposals may land in one Ready (one batch).
      const k = this.rng.chance(0.3) ? this.rng.range(2, 6) : 1;
      for (let i = 0; i < k; i++) {
        const id = `c${this.nextId++}`;
        const res = r.propose(this.opts.payload ? this.opts.payload(this.rng) : enc.encode(id));
        if (res.ok) this.pending.set(`${n.id}:${res.index}`, { id, start: this.now });
        else {
          this.clientGuess = res.leader ?? null;
          break;
        }
      }
    } else if (x < 0.97) {
      this.readAt(n);
      return;
    } else {
      const voters = r.confState.voters.filter((v) => v !== n.id);
      if (r.role === 'leader' && voters.length) {
        const to = this.rng.pick(voters);
        if (r.transferLeader(to)) this.log(`TRANSFER ${n.id} -> ${to}`);
      }
    }
    this.drive(n);
  }

  /** Index at which a liveness probe was first applied (by any node). */
  private probeApplied: number | null = null;

  /** A linearizable read at `n`: remember what was committed when it began. */
  private readAt(n: SimNode): void {
    if (n.state !== 'up' || !n.raft) return;
    const ctx = `r${this.nextId++}`;
    this.reads.set(ctx, { node: n.id, committedAtStart: this.check.maxCommit, start: this.now });
    n.raft.readIndex(enc.encode(ctx));
    this.drive(n);
  }

  private onApplied(n: SimNode, index: number, key: string): void {
    if (this.probeApplied === null && key.startsWith('N:probe')) this.probeApplied = index;
    // A client's proposal: any non-empty normal entry but the liveness probe.
    if (key.startsWith('N:') && key.length > 2 && !key.startsWith('N:probe') && this.isFirstApply(index)) this.result.proposalsCommitted++;
    const p = this.pending.get(`${n.id}:${index}`);
    if (p) this.pending.delete(`${n.id}:${index}`);
  }

  private readonly firstApplied = new Set<number>();
  private isFirstApply(index: number): boolean {
    if (this.firstApplied.has(index)) return false;
    this.firstApplied.add(index);
    return true;
  }

  private onReadState(n: SimNode, index: number, ctx: Uint8Array): void {
    const key = new TextDecoder().decode(ctx);
    const p = this.reads.get(key);
    if (!p) return;
    this.reads.delete(key);
    this.check.checkRead(n.id, index, p.committedAtStart);
    this.result.readsServed++;
  }

  private onReadDropped(ctx: Uint8Array): void {
    if (this.reads.delete(new TextDecoder().decode(ctx))) this.result.readsDropped++;
  }

  // ---- membership operator ------------------------------------------------------------

  private operator(): void {
    const l = this.currentLeader();
    if (!l || !l.raft || this.opCycles >= 6) return;
    const r = l.raft;
    const conf = r.confState;
    const propose = (cc: ConfChange): void => {
      const res = r.proposeConfChange(cc);
      if (!res.ok) return;
      this.result.confChanges++;
      this.log(`CONF PROPOSE ${cc.type} ${cc.node} at ${res.index} via ${l.id}`);
      if (this.rng.chance(0.25)) {
        // The change is interrupted: the leader dies before it commits.
        this.drive(l);
        this.crash(l, 'right after proposing a membership change');
        const inc = l.incarnation;
        this.call(this.rng.range(5, 30) * TICK_MS, `restart ${l.id}`, () => {
          if (l.incarnation === inc) this.restart(l);
        });
      }
    };
    if (this.opMode === 'idle') {
      // Wander between cluster sizes: sometimes grow by two, sometimes shrink below the start.
      const n0 = this.opts.nodes;
      const target = this.rng.pick([n0, n0 + 1, n0 + 1, n0 + 2, n0 > 3 ? n0 - 1 : n0]);
      if (conf.voters.length > target || conf.voters.length >= n0 + 2) {
        this.opMode = 'removing';
      } else {
        const id = `n${this.nextNodeNo++}`;
        this.opTarget = id;
        this.opMode = 'adding';
        this.log(`START ${id} (new, empty store)`);
        this.addNode(id);
      }
    }
    const t = this.opTarget;
    switch (this.opMode) {
      case 'adding':
        if (t && conf.learners.includes(t)) this.opMode = 'promoting';
        else if (t) propose({ type: 'addLearner', node: t });
        break;
      case 'promoting': {
        if (t && conf.voters.includes(t)) {
          this.opMode = 'idle';
          this.opTarget = null;
          this.opCycles++;
          break;
        }
        const p = r.progress().find((x) => x.id === t);
        if (t && p && p.match + 5 >= r.log.lastIndex()) propose({ type: 'promote', node: t });
        break;
      }
      case 'removing': {
        if (this.opTarget && !conf.voters.includes(this.opTarget) && !conf.learners.includes(this.opTarget)) {
          const gone = this.nodes.get(this.opTarget);
          // Usually the operator shuts a removed node down; sometimes it lingers.
          const stop = gone !== undefined && this.rng.chance(0.7);
          this.log(`REMOVED ${this.opTarget}${stop ? ', shut down' : ', left running'}`);
          if (gone && stop) {
            gone.state = 'off';
            gone.raft = null;
            gone.driver = null;
            gone.tickFn = null;
          }
          this.opMode = 'idle';
          this.opTarget = null;
          this.opCycles++;
          break;
        }
        if (!this.opTarget) this.opTarget = this.rng.chance(0.4) ? l.id : this.rng.pick(conf.voters);
        propose({ type: 'remove', node: this.opTarget });
        break;
      }
    }
    this.drive(l);
  }

  // ---- the run ------------------------------------------------------------------------

  private live(): { id: NodeId; r: RaftNode }[] {
    const out: { id: NodeId; r: RaftNode }[] = [];
    for (const n of this.nodes.values()) if (n.state !== 'down' && n.state !== 'off' && n.raft) out.push({ id: n.id, r: n.raft });
    return out;
  }

  private afterStep(): void {
    for (const n of this.nodes.values()) {
      if (!n.raft || n.state === 'down' || n.state === 'off') continue;
      this.check.checkLeader(n.id, n.raft);
    }
    if (this.steps % 512 === 0) this.check.checkLogsPairwise(this.live());
  }

  private handle(ev: Ev): void {
    switch (ev.kind) {
      case 'tick': {
        const n = this.nodes.get(ev.node)!;
        if (n.state === 'off') return;
        if (n.state === 'paused') n.missedTicks++;
        else this.tickNode(n);
        // a little drift: nodes' clocks do not run at exactly the same rate
        this.at(TICK_MS + (this.rng.chance(0.1) ? this.rng.range(-2, 2) : 0), { kind: 'tick', node: ev.node });
        return;
      }
      case 'deliver':
        // A calm network: what the faulty one still held back far beyond a calm delay (slow
        // links deliver up to 60 ticks late) is lost, not delivered long after faults stop.
        if (this.calmSince !== null && ev.sent < this.calmSince && ev.time > this.calmSince + CALM_DELAY) return;
        this.deliver(ev.msg);
        return;
      case 'fault':
        if (!this.faultPhase) return;
        this.fault();
        // Faults come in storms with calm spells between them, so that the cluster also
        // makes progress (long logs, snapshots, pipelining) between the storms.
        this.at(this.rng.chance(0.8) ? this.rng.range(1, 10 * TICK_MS) : this.rng.range(20, 60) * TICK_MS, { kind: 'fault' });
        return;
      case 'client':
        this.client();
        this.at(this.rng.range(1, (this.faultPhase ? 3 : 6) * TICK_MS), { kind: 'client' });
        return;
      case 'operator':
        if (!this.faultPhase) return;
        this.operator();
        this.at(this.rng.range(5, 30) * TICK_MS, { kind: 'operator' });
        return;
      case 'call':
        ev.fn();
        return;
    }
  }

  private stepOnce(): boolean {
    const ev = this.events.pop();
    if (!ev) return false;
    this.now = ev.time;
    this.steps++;
    this.handle(ev);
    this.afterStep();
    return true;
  }

  run(): SimResult {
    try {
      this.runInner();
    } catch (e) {
      if (e instanceof Violation) this.result.violation = e.message;
      else this.result.violation = `crash: ${(e as Error).stack ?? String(e)} (seed ${this.opts.seed}, step ${this.steps})`;
    }
    this.result.steps = this.steps;
    this.result.elections = this.check.elections;
    this.result.virtualTicks = Math.round(this.ticksNow());
    return this.result;
  }

  private stableLeader(): SimNode | null {
    const l = this.currentLeader();
    if (!l || !l.raft) return null;
    const r = l.raft;
    return r.log.term(r.log.committed) === r.term ? l : null;
  }

  private runInner(): void {
    const quiet = this.rng.chance(0.1); // some runs have no faults at all
    const c = this.raftCfg;
    this.log(
      `START ${this.opts.nodes} nodes; faults: ${quiet ? 'none' : this.profile}; membership changes: ${this.membership ? 'yes' : 'no'}; ` +
        `heartbeat ${c.heartbeatTicks}, election ${c.electionTicks} ticks, preVote ${c.preVote}, checkQuorum ${c.checkQuorum}, ` +
        `maxMsgBytes ${c.maxMsgBytes}, maxInflight ${c.maxInflight}, snapshotChunkBytes ${c.snapshotChunkBytes}`,
    );
    this.at(this.rng.range(1, 10) * TICK_MS, { kind: 'client' });
    if (!quiet) this.at(this.rng.range(20, 60) * TICK_MS, { kind: 'fault' });
    if (this.membership) this.at(this.rng.range(20, 60) * TICK_MS, { kind: 'operator' });

    // Phase 1: random faults.
    while (this.steps < this.opts.steps) {
      if (!this.stepOnce()) break;
      if (this.result.coldElectTicks === null && this.stableLeader()) this.result.coldElectTicks = this.ticksNow();
    }
    this.check.checkLogsPairwise(this.live());

    // Phase 2: liveness. Faults stop, every node comes back, the network is calm.
    this.stopFaults();
    this.afterStep();
    const t0 = this.now;
    const bound = 10 * this.electionTicks * TICK_MS;
    let probe: { node: SimNode; index: number; term: number } | null = null;
    let committedAt = -1;
    while (this.now - t0 <= 2 * bound) {
      if (!this.stepOnce()) break;
      const l = this.stableLeader();
      if (l && this.result.calmElectTicks === null) this.result.calmElectTicks = (this.now - t0) / TICK_MS;
      if (committedAt < 0) {
        if (this.probeApplied !== null) {
          committedAt = this.now;
          probe = { ...probe!, index: this.probeApplied };
          this.result.calmCommitTicks = (this.now - t0) / TICK_MS;
          this.log(`LIVENESS probe committed at ${this.probeApplied} after ${this.result.calmCommitTicks.toFixed(1)} ticks`);
          continue;
        }
        // Propose on the leader; again on a new leader if the one we asked lost its office.
        const stale = probe && !(probe.node.raft?.role === 'leader' && probe.node.raft.term === probe.term);
        if ((!probe || stale) && l && l.raft) {
          const res = l.raft.propose(enc.encode(`probe${this.nextId++}`));
          if (res.ok) probe = { node: l, index: res.index, term: res.term };
          this.drive(l);
        }
        if (this.now - t0 > bound) {
          this.check.fail(`Liveness: no proposal committed within ${bound / TICK_MS} ticks after faults stopped (leader: ${this.currentLeader()?.id ?? 'none'})`);
        }
      } else {
        // Every live member catches up with the probe.
        const lead = this.currentLeader();
        const members = lead?.raft ? [...lead.raft.confState.voters, ...lead.raft.confState.learners] : [];
        const behind = members.filter((id) => {
          const n = this.nodes.get(id);
          return n && n.state === 'up' && n.sm.index < probe!.index;
        });
        if (behind.length === 0) break;
        if (this.now - committedAt > bound) {
          const info = behind.map((id) => {
            const p = lead?.raft?.progress().find((x) => x.id === id);
            const inflight = (lead?.raft as unknown as { prs?: Map<NodeId, { inflights: { count: number } }> } | undefined)?.prs?.get(id)?.inflights.count;
            return `${id}@${this.nodes.get(id)!.sm.index}${p ? ` (${p.state}, match ${p.match}, next ${p.next}, in flight ${inflight}/${this.raftCfg.maxInflight})` : ''}`;
          });
          this.check.fail(`Liveness: ${info.join(', ')} still behind ${probe!.index} ${bound / TICK_MS} ticks after it committed`);
        }
      }
    }
    this.check.checkLogsPairwise(this.live());
  }
}

export function runSeed(opts: SimOptions): SimResult {
  return new Sim(opts).run();
}

/** Steps of the faulty phase when not told otherwise (about 350 ticks, 35 election timeouts). */
export const DEFAULT_STEPS = 4000;

/** Cluster size by seed when not told: 3 for even seeds, 5 for odd ones. */
export function nodesFor(seed: number): number {
  return seed % 2 === 0 ? 3 : 5;
}

export function replayCommand(r: Pick<SimResult, 'seed' | 'nodes'>, steps: number, plant?: PlantedBug, storageFaults?: SimOptions['storageFaults']): string {
  return `npm run sim -- --seed ${r.seed} --nodes ${r.nodes} --steps ${steps}${plant ? ` --plant ${plant}` : ''}${storageFaults ? ` --storage-faults ${storageFaults}` : ''}`;
}
