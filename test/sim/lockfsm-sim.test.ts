// The lock machine driven through the Raft simulator: the real LockMachine on every node,
// fed by the committed log under the simulator's faults (crashes, partitions, lost,
// duplicated and reordered messages, snapshots, membership changes), with a random lock
// workload as clients. See lock-check.ts for what is checked after every entry.
//
// npm test runs a fixed set of seeds (3 nodes for even seeds, 5 for odd ones). More:
//   LOCK_SIM_SEEDS=1000 [LOCK_SIM_START=0] node --import tsx test/sim/lockfsm-sim.test.ts
// One seed, with the simulator's trace:
//   LOCK_SIM_SEED=17 [LOCK_SIM_NODES=5] [LOCK_SIM_STEPS=4000] node --import tsx test/sim/lockfsm-sim.test.ts
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Packr, Unpackr } from 'msgpackr';
import { decodeCommand, type MachineConfig } from '../../src/lockfsm/index.js';
import type { NodeId } from '../../src/raft/index.js';
import { DEFAULT_STEPS, nodesFor } from './cluster.js';
import { LockCheck, LockNodeMachine } from './lock-check.js';
import { lockReplayCommand, runLockSeed, type LockSimResult } from './lock-sim.js';
import { LOCK_SIM_CONFIG, type LockClients } from './lock-workload.js';

const env = (name: string): number | undefined => (process.env[name] === undefined ? undefined : Number(process.env[name]));
const ONE = env('LOCK_SIM_SEED');
const SEEDS = ONE !== undefined ? 1 : (env('LOCK_SIM_SEEDS') ?? 40);
const START = ONE ?? env('LOCK_SIM_START') ?? 0;
const STEPS = env('LOCK_SIM_STEPS') ?? DEFAULT_STEPS;
const CHUNKS = SEEDS >= 4 ? 4 : 1;

const all: LockSimResult[] = [];

for (let k = 0; k < CHUNKS; k++) {
  const lo = START + Math.floor((SEEDS * k) / CHUNKS);
  const hi = START + Math.floor((SEEDS * (k + 1)) / CHUNKS);
  test(`lock machine under Raft faults, seeds ${lo}..${hi - 1}: identical machines, invariants hold`, () => {
    const failures: string[] = [];
    for (let seed = lo; seed < hi; seed++) {
      const nodes = env('LOCK_SIM_NODES') ?? nodesFor(seed);
      const r = runLockSeed({ seed, nodes, steps: STEPS, ...(ONE !== undefined ? { trace: true } : {}) });
      all.push(r);
      if (r.violation) failures.push(`seed ${seed}: ${r.violation}\n    replay: ${lockReplayCommand(r, STEPS)}`);
    }
    assert.deepEqual(failures, []);
  });
}

test('the runs did real work: commands, retries, snapshots compared, restores', (t) => {
  const sum = (f: (r: LockSimResult) => number) => all.reduce((a, r) => a + f(r), 0);
  t.diagnostic(
    `${all.length} seeds: ${sum((r) => r.commands)} commands applied (${sum((r) => r.proposed)} proposed, ${sum((r) => r.retriesSent)} re-sent), ` +
      `retries answered from memory ${sum((r) => r.retriesReplayed)}, refused ${sum((r) => r.retriesRefused)}; ` +
      `${sum((r) => r.snapshotsCompared)} snapshots compared with the reference (${sum((r) => r.referenceRebuilds)} reference rebuilds), ` +
      `${sum((r) => r.snapshotsInstalled)} installed, ${sum((r) => r.crashes)} crashes, ${sum((r) => r.confChanges)} membership changes; ` +
      `${sum((r) => r.liveAtEnd)} live machines compared at the end`,
  );
  if (ONE !== undefined) return;
  assert.equal(all.length, SEEDS);
  assert.ok(sum((r) => r.commands) > 50 * SEEDS);
  assert.ok(sum((r) => r.retriesReplayed) > SEEDS);
  assert.ok(sum((r) => r.snapshotsCompared) > 10 * SEEDS);
  assert.ok(sum((r) => r.snapshotsInstalled) > SEEDS / 2);
  assert.ok(sum((r) => r.crashes) > SEEDS);
});

// ---- the checks catch what they are meant to catch ---------------------------------------

/** Runs seeds until one reports a violation. */
function firstViolation(makeCheck: (clients: LockClients) => LockCheck, opts: { seedSettings?: boolean } = {}): string | null {
  for (let seed = 0; seed < 12; seed++) {
    const r = runLockSeed({ seed, nodes: nodesFor(seed), steps: 2500, ...opts }, makeCheck);
    if (r.violation) return r.violation;
  }
  return null;
}

/** Nodes whose files disagree, as during a rolling config change: n2 allows one lock per
 *  session and n3 has no lock-delay and a longer minimum TTL. */
class RollingChange extends LockCheck {
  override nodeConfig(node: NodeId): MachineConfig {
    if (node === 'n2') return { ...this.config, maxLocksPerSession: 1 };
    if (node === 'n3') return { ...this.config, defaultLockDelayMs: 0, minTtlMs: this.config.minTtlMs + 1 };
    return this.config;
  }
}

test('a node running with other bounds is caught answering differently (when no leader seeds the settings)', () => {
  const v = firstViolation((clients) => new RollingChange(LOCK_SIM_CONFIG, clients), { seedSettings: false });
  assert.match(v ?? '', /State Machine Safety \(application\)|lock invariant/);
});

test('nodes whose files disagree apply every entry alike once a leader seeds the settings, over 12 seeds', () => {
  const failures: string[] = [];
  for (let seed = 0; seed < 12; seed++) {
    let check: RollingChange | undefined;
    const r = runLockSeed({ seed, nodes: nodesFor(seed), steps: DEFAULT_STEPS }, (clients) => (check = new RollingChange(LOCK_SIM_CONFIG, clients)));
    if (r.violation) failures.push(`seed ${seed}: ${r.violation}`);
    assert.ok(check!.stats.commands > 50, `seed ${seed} applied commands`);
  }
  assert.deepEqual(failures, []);
});

test('planted: a follower that keeps its own settings instead of the configure entry is caught', () => {
  /** n2's machine skips configure entries: it goes on applying its own file's values. */
  class KeepsLocal extends RollingChange {
    override machines() {
      const base = super.machines();
      const plant = (node: NodeId, sm: LockNodeMachine): LockNodeMachine => {
        if (node !== 'n2') return sm;
        const m = sm.m;
        const applyRaw = m.applyRaw.bind(m);
        m.applyRaw = (index, data) => (decodeCommand(data).type === 'configure' ? (m.skip(index), { result: { type: 'ok' }, events: [] }) : applyRaw(index, data));
        return sm;
      };
      return { create: (node: NodeId) => plant(node, base.create(node) as LockNodeMachine), restore: (node: NodeId, data: Uint8Array) => plant(node, base.restore(node, data) as LockNodeMachine) };
    }
  }
  const v = firstViolation((clients) => new KeepsLocal(LOCK_SIM_CONFIG, clients));
  assert.match(v ?? '', /State Machine Safety \(application\)|lock invariant|differ/);
});

test('a restore that loses the answers kept for retries is caught by the snapshot comparison', () => {
  const reader = new Unpackr({ useRecords: false, mapsAsObjects: true, int64AsType: 'number' });
  const writer = new Packr({ useRecords: false, variableMapSize: true, moreTypes: false });
  class Forgetful extends LockCheck {
    override machines() {
      const base = super.machines();
      return {
        create: base.create,
        restore: (node: NodeId, data: Uint8Array) => {
          // The lockfsm snapshot follows the first newline; drop every session's answers.
          const nl = data.indexOf(0x0a);
          const body = reader.unpack(data.subarray(nl + 1)) as { sessions: [number, number, number, unknown[]][] };
          for (const s of body.sessions) s[3] = [];
          const bytes = writer.pack(body);
          const out = new Uint8Array(nl + 1 + bytes.length);
          out.set(data.subarray(0, nl + 1));
          out.set(bytes, nl + 1);
          return LockNodeMachine.restore(node, this, out, this.nodeConfig(node));
        },
      };
    }
  }
  const v = firstViolation((clients) => new Forgetful(LOCK_SIM_CONFIG, clients));
  assert.match(v ?? '', /Snapshot|Exactly-once|State Machine Safety/);
});
