// The nemesis: a fault schedule drawn from the run's seed, and the code that injects it
// into a live cluster. The plan (kinds, times, durations, and the random draws behind
// every choice) depends on the seed alone, so a failing seed replays the same faults in the
// same order; which node "the leader" is, or which client holds a lock when a client pause
// begins, is read from the live run, as it has to be.
//
// Faults run one at a time: a quiet gap, a fault, its heal, the next gap. Each start and
// end is logged (with its targets) into the history on the run's clock.
import { Prng } from '../support/prng.js';
import type { ChaosCluster } from './cluster.js';
import { edge, type Edge } from './proxy.js';

export const FAULT_KINDS = [
  'kill',
  'kill-leader',
  'pause',
  'pause-leader',
  'pause-client',
  'partition-halves',
  'partition-leader',
  'partition-bridge',
  'partition-one-way',
] as const;

export type FaultKind = (typeof FAULT_KINDS)[number];

export interface FaultStep {
  /** When the fault starts, from the start of the nemesis. */
  readonly atMs: number;
  readonly kind: FaultKind;
  readonly durationMs: number;
  /** Seeds the choices made against the live cluster (targets, halves). */
  readonly choiceSeed: number;
}

export interface PlanOptions {
  readonly seed: number;
  /** Every fault has ended by then (ms from the start of the nemesis). */
  readonly runMs: number;
  /** Session TTL: client pauses outlast it, and some node pauses do. */
  readonly ttlMs: number;
  /** The kinds to draw from (default: all). */
  readonly kinds?: readonly FaultKind[];
}

/** The fault schedule for a seed. Pure. */
export function planFaults({ seed, runMs, ttlMs, kinds = FAULT_KINDS }: PlanOptions): FaultStep[] {
  const rng = new Prng(seed ^ 0x6e656d65); // a stream of its own: nothing else draws from it
  const steps: FaultStep[] = [];
  let at = rng.range(1_000, 2_500);
  for (;;) {
    const kind = rng.pick(kinds);
    const durationMs = faultDuration(kind, rng, ttlMs);
    const choiceSeed = rng.u32();
    if (at + durationMs > runMs) break;
    steps.push({ atMs: at, kind, durationMs, choiceSeed });
    at += durationMs + rng.range(1_000, 3_000);
  }
  return steps;
}

function faultDuration(kind: FaultKind, rng: Prng, ttlMs: number): number {
  switch (kind) {
    case 'kill':
    case 'kill-leader':
      return rng.range(500, 3_000); // time down before the restart
    case 'pause':
    case 'pause-leader':
      return rng.range(300, ttlMs + 1_500); // some outlast the lease TTL
    case 'pause-client':
      return ttlMs + rng.range(500, 2_500); // always past the lease: the stale-holder scenario
    default:
      return rng.range(1_000, 7_000); // some outlast the peers' 5 s link liveness
  }
}

// ---- partitions (pure) ----------------------------------------------------------------------

/** Every edge between the two groups, both ways. */
export function cutBetween(a: readonly string[], b: readonly string[]): Edge[] {
  const out: Edge[] = [];
  for (const x of a) for (const y of b) out.push(edge(x, y), edge(y, x));
  return out;
}

/** A random minority / majority split. */
export function splitHalves(ids: readonly string[], rng: Prng): { minority: string[]; majority: string[] } {
  const order = rng.shuffle(ids);
  const minoritySize = rng.range(1, Math.floor((ids.length - 1) / 2));
  return { minority: order.slice(0, minoritySize).sort(), majority: order.slice(minoritySize).sort() };
}

/** One node sees both sides; the sides do not see each other. */
export function bridge(ids: readonly string[], rng: Prng): { bridge: string; left: string[]; right: string[]; cuts: Edge[] } {
  const order = rng.shuffle(ids);
  const bridgeNode = order[0]!;
  const rest = order.slice(1);
  const half = Math.floor(rest.length / 2);
  const left = rest.slice(0, half).sort();
  const right = rest.slice(half).sort();
  return { bridge: bridgeNode, left, right, cuts: cutBetween(left, right) };
}

/** mute: `node`'s messages to everyone vanish (it still hears them); deaf: the reverse. */
export function oneWay(node: string, ids: readonly string[], mode: 'mute' | 'deaf'): Edge[] {
  return ids.filter((o) => o !== node).map((o) => (mode === 'mute' ? edge(node, o) : edge(o, node)));
}

// ---- injection ------------------------------------------------------------------------------

/** The client processes, as the nemesis sees them. */
export interface ClientControl {
  /** Each client and what it holds right now (a lock or election name, or null). */
  clients(): readonly { readonly process: string; readonly holding: string | null }[];
  pause(process: string): void;
  resume(process: string): void;
}

/** `role`: whether the fault struck the leader of the moment (null: not a node fault). */
export type FaultLog = (kind: FaultKind, phase: 'start' | 'end', detail: string, role?: 'leader' | 'follower') => void;

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted || ms <= 0) return resolve();
    const t = setTimeout(done, ms);
    function done(): void {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

export class Nemesis {
  readonly injected = new Map<FaultKind, number>();

  constructor(
    private readonly cluster: ChaosCluster,
    private readonly clients: ClientControl,
    private readonly log: FaultLog,
  ) {}

  /** Runs the plan; `signal` cuts it short (the current fault is still healed). */
  async run(plan: readonly FaultStep[], signal?: AbortSignal): Promise<void> {
    const started = performance.now();
    for (const step of plan) {
      await sleep(started + step.atMs - performance.now(), signal);
      if (signal?.aborted) return;
      const heal = await this.inject(step);
      this.injected.set(step.kind, (this.injected.get(step.kind) ?? 0) + 1);
      await sleep(step.durationMs, signal);
      const detail = await heal();
      this.log(step.kind, 'end', detail);
    }
  }

  /** Starts one fault; returns what ends it (which resolves with a note for the log). */
  private async inject(step: FaultStep): Promise<() => Promise<string>> {
    const rng = new Prng(step.choiceSeed);
    const { cluster } = this;
    const ids = cluster.ids;
    // The leader of the moment, read before the fault, so every fault says whom it struck.
    const leaderNow = step.kind === 'pause-client' ? null : await cluster.currentLeader();
    const roleOf = (struck: readonly string[]): 'leader' | 'follower' =>
      leaderNow !== null && struck.includes(leaderNow) ? 'leader' : 'follower';
    let role: 'leader' | 'follower' | undefined;
    const start = (detail: string): void => this.log(step.kind, 'start', detail, role);
    switch (step.kind) {
      case 'kill':
      case 'kill-leader': {
        const target = step.kind === 'kill-leader' ? this.leaderOr(rng, leaderNow) : { id: rng.pick(cluster.responsive), note: '' };
        role = roleOf([target.id]);
        start(`SIGKILL ${target.id}${target.note}`);
        await cluster.kill(target.id);
        return async () => {
          await cluster.start(target.id);
          return `${target.id} restarted`;
        };
      }
      case 'pause':
      case 'pause-leader': {
        const target = step.kind === 'pause-leader' ? this.leaderOr(rng, leaderNow) : { id: rng.pick(cluster.responsive), note: '' };
        role = roleOf([target.id]);
        start(`SIGSTOP ${target.id}${target.note} for ${step.durationMs} ms`);
        cluster.pause(target.id);
        return async () => {
          cluster.resume(target.id);
          return `SIGCONT ${target.id}`;
        };
      }
      case 'pause-client': {
        const process = await this.clientToPause(rng);
        start(`SIGSTOP client ${process.id}${process.note} for ${step.durationMs} ms`);
        this.clients.pause(process.id);
        return async () => {
          this.clients.resume(process.id);
          return `SIGCONT client ${process.id}`;
        };
      }
      case 'partition-halves': {
        const { minority, majority } = splitHalves(ids, rng);
        role = roleOf(minority);
        cluster.mesh.setCuts(cutBetween(minority, majority));
        start(`${minority.join(' ')} | ${majority.join(' ')}`);
        return this.healLinks();
      }
      case 'partition-leader': {
        const leader = this.leaderOr(rng, leaderNow);
        role = roleOf([leader.id]);
        const others = ids.filter((id) => id !== leader.id);
        cluster.mesh.setCuts(cutBetween([leader.id], others));
        start(`${leader.id}${leader.note} | ${others.join(' ')}`);
        return this.healLinks();
      }
      case 'partition-bridge': {
        const b = bridge(ids, rng);
        // The bridge keeps a quorum whichever side it helps; the fault strikes the leader
        // when the leader is on a side (cut off from the other side).
        role = leaderNow !== null && leaderNow !== b.bridge ? 'leader' : 'follower';
        cluster.mesh.setCuts(b.cuts);
        start(`${b.left.join(' ')} | ${b.right.join(' ')}, bridged by ${b.bridge}`);
        return this.healLinks();
      }
      case 'partition-one-way': {
        const target = rng.chance(0.5) ? this.leaderOr(rng, leaderNow) : { id: rng.pick(ids), note: '' };
        role = roleOf([target.id]);
        const mode = rng.chance(0.5) ? 'mute' : 'deaf';
        cluster.mesh.setCuts(oneWay(target.id, ids, mode));
        start(`${target.id}${target.note} ${mode === 'mute' ? 'cannot send to' : 'cannot hear from'} the others (${cluster.mesh.cutEdges.join(', ')})`);
        return this.healLinks();
      }
    }
  }

  private healLinks(): () => Promise<string> {
    return async () => {
      this.cluster.mesh.healAll();
      return 'links healed';
    };
  }

  /** The leader, or (when none answers) a random responsive node, saying which. */
  private leaderOr(rng: Prng, leader: string | null): { id: string; note: string } {
    if (leader !== null) return { id: leader, note: ' (leader)' };
    return { id: rng.pick(this.cluster.responsive), note: ' (no leader answered: a random node)' };
  }

  /**
   * A client that holds a lock or a leadership, so that its lease lapses while it holds and
   * its next write is stale; waits a little for one, else any client.
   */
  private async clientToPause(rng: Prng): Promise<{ id: string; note: string }> {
    const deadline = performance.now() + 2_000;
    for (;;) {
      const holders = this.clients.clients().filter((c) => c.holding !== null);
      if (holders.length > 0) {
        const c = holders[rng.int(holders.length)]!;
        return { id: c.process, note: ` (holding ${c.holding})` };
      }
      if (performance.now() > deadline) break;
      await sleep(10);
    }
    const all = this.clients.clients();
    return { id: all[rng.int(all.length)]!.process, note: ' (holding nothing)' };
  }
}
