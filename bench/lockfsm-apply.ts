// Apply throughput of the pure lock state machine, without Raft, storage or network:
// 10,000 sessions holding 100,000 exclusive locks, then a mixed workload of releases and
// re-acquires, contended waits, busy answers, shared locks (semaphores), cancels and
// fenced kv writes. Keepalives are not logged, so they are not part of it. Also the
// snapshot's size and the time to take and restore it. Prints a table and writes
// bench/results/lockfsm-apply.json.
//
//   node --expose-gc --import tsx bench/lockfsm-apply.ts [--ops 300000] [--seed 42]
//
// The mixed phase runs twice from the same starting snapshot: through apply() (typed
// objects) and through applyRaw() (msgpack bytes: decode + validate + apply), and the two
// end states must be byte-identical.
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { performance } from 'node:perf_hooks';
import {
  encodeCommand,
  LockMachine,
  DEFAULT_MACHINE_CONFIG,
  type Applied,
  type Command,
  type MachineConfig,
} from '../src/lockfsm/index.js';
import { mulberry32 } from '../test/support/prng.js';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1]! : fallback;
}

const SESSIONS = 10_000;
const LOCKS = 100_000;
const SHARED_LOCKS = 1_000;
const SHARED_LIMIT = 8;
const KV_KEYS = 5_000;
const OPS = Number(arg('ops', '300000'));
const SEED = Number(arg('seed', '42'));
const CONFIG: MachineConfig = { ...DEFAULT_MACHINE_CONFIG };

/** Uniform in [0, 1), seeded, so every run does the same work. */
function prng(seed: number): () => number {
  const u32 = mulberry32(seed);
  return () => u32() / 4294967296;
}

/**
 * Drives the machine like many clients would: it learns holders and waiters from the
 * events (as a server would) and picks the next command from them.
 */
class Clients {
  index = 0;
  readonly log: { index: number; cmd: Command }[] = [];
  readonly sessions: number[] = [];
  private readonly seqs = new Map<number, number>();
  /** Exclusive lock -> holder. */
  private readonly exclusive = new Map<string, { session: number; token: number }>();
  /** `${name}|${session}` -> token, for shared holds. */
  private readonly shared = new Map<string, number>();
  /** Queued (session, lock) pairs, possibly stale; `waiting` says which still are. */
  private readonly waitList: [number, string][] = [];
  private readonly waiting = new Set<string>();
  private readonly queueLength = new Map<string, number>();
  readonly counts = new Map<string, number>();
  private readonly value = new Uint8Array(32).fill(7);

  constructor(
    readonly m: LockMachine,
    private readonly random: () => number,
    private readonly record: boolean,
  ) {}

  private pick<T>(a: readonly T[]): T {
    return a[Math.floor(this.random() * a.length)]!;
  }

  private scoped(session: number): { session: number; seq: number; ackedSeq?: number } {
    const seq = (this.seqs.get(session) ?? 0) + 1;
    this.seqs.set(session, seq);
    // Each client has had every earlier answer: the machine keeps one answer per session.
    return seq > 1 ? { session, seq, ackedSeq: seq - 1 } : { session, seq };
  }

  apply(cmd: Command): Applied {
    const index = ++this.index;
    if (this.record) this.log.push({ index, cmd });
    const applied = this.m.apply(index, cmd);
    const r = applied.result;
    const key = `${cmd.type}:${r.type === 'error' ? r.code : r.type}`;
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
    for (const e of applied.events) {
      switch (e.type) {
        case 'sessionOpened':
          this.sessions.push(e.session);
          break;
        case 'granted':
          this.settle(e.session, e.name);
          if (e.mode === 'exclusive') this.exclusive.set(e.name, { session: e.session, token: e.token });
          else this.shared.set(`${e.name}|${e.session}`, e.token);
          break;
        case 'released':
          if (this.exclusive.get(e.name)?.session === e.session) this.exclusive.delete(e.name);
          else this.shared.delete(`${e.name}|${e.session}`);
          break;
        case 'queued':
          this.waitList.push([e.session, e.name]);
          this.waiting.add(`${e.name}|${e.session}`);
          this.queueLength.set(e.name, (this.queueLength.get(e.name) ?? 0) + 1);
          break;
      }
    }
    if (cmd.type === 'cancelWait' && r.type === 'ok') this.settle(cmd.session, cmd.name);
    return applied;
  }

  private settle(session: number, name: string): void {
    if (this.waiting.delete(`${name}|${session}`)) this.queueLength.set(name, this.queueLength.get(name)! - 1);
  }

  populate(): void {
    for (let i = 0; i < SESSIONS; i++) this.apply({ type: 'openSession', ttlMs: 10_000 });
    for (let k = 0; k < LOCKS; k++) {
      const session = this.sessions[k % SESSIONS]!;
      this.apply({ type: 'acquire', ...this.scoped(session), name: `l/${k}`, mode: 'exclusive', wait: false });
    }
  }

  /** Takes over the sessions and holders an earlier driver left (read from the machine). */
  adopt(from: Clients): void {
    this.index = from.index;
    this.sessions.push(...from.sessions);
    for (const l of this.m.locks('l/')) {
      for (const h of l.holders) this.exclusive.set(l.name, { session: h.session, token: h.token });
    }
    for (const [session, seq] of from.seqs) this.seqs.set(session, seq);
  }

  /** One mixed step: one command. */
  step(): void {
    const r = this.random();
    const name = `l/${Math.floor(this.random() * LOCKS)}`;
    const holder = this.exclusive.get(name);
    const anyone = this.pick(this.sessions);
    if (r < 0.4) {
      // churn: the holder releases (handing over to a waiter, if any), or someone takes it
      if (holder) this.apply({ type: 'release', ...this.scoped(holder.session), name, token: holder.token });
      else this.apply({ type: 'acquire', ...this.scoped(anyone), name, mode: 'exclusive', wait: true });
    } else if (r < 0.55) {
      // contention: queue behind the holder (short queues, as real clients give up)
      const wait = (this.queueLength.get(name) ?? 0) < 2 && holder?.session !== anyone;
      this.apply({ type: 'acquire', ...this.scoped(anyone), name, mode: 'exclusive', wait });
    } else if (r < 0.65) {
      // try-lock: mostly busy
      this.apply({ type: 'acquire', ...this.scoped(anyone), name, mode: 'exclusive', wait: false });
    } else if (r < 0.8) {
      // shared semaphore: take a slot or give it back
      const pool = `r/${Math.floor(this.random() * SHARED_LOCKS)}`;
      const token = this.shared.get(`${pool}|${anyone}`);
      if (token !== undefined) this.apply({ type: 'release', ...this.scoped(anyone), name: pool, token });
      else if (this.waiting.has(`${pool}|${anyone}`)) this.apply({ type: 'cancelWait', ...this.scoped(anyone), name: pool });
      else {
        this.apply({
          type: 'acquire',
          ...this.scoped(anyone),
          name: pool,
          mode: 'shared',
          limit: SHARED_LIMIT,
          wait: true,
        });
      }
    } else if (r < 0.85) {
      // a waiter gives up
      while (this.waitList.length > 0) {
        const at = Math.floor(this.random() * this.waitList.length);
        const [session, lock] = this.waitList[at]!;
        this.waitList[at] = this.waitList[this.waitList.length - 1]!;
        this.waitList.pop();
        if (this.waiting.has(`${lock}|${session}`)) {
          this.apply({ type: 'cancelWait', ...this.scoped(session), name: lock });
          return;
        }
      }
      this.apply({ type: 'acquire', ...this.scoped(anyone), name, mode: 'exclusive', wait: false });
    } else {
      // a fenced write by the holder (or, 1 in 10, with a stale token)
      if (!holder) {
        this.apply({ type: 'acquire', ...this.scoped(anyone), name, mode: 'exclusive', wait: true });
        return;
      }
      const stale = this.random() < 0.1;
      this.apply({
        type: 'put',
        ...this.scoped(holder.session),
        key: `kv/${Math.floor(this.random() * KV_KEYS)}`,
        value: this.value,
        fence: { lock: name, token: stale ? holder.token - 1 : holder.token },
      });
    }
  }
}

interface Row {
  phase: string;
  commands: number;
  /** Wall-clock seconds, and the CPU seconds of this process (user + system). */
  seconds: number;
  cpuSeconds: number;
  perSecond: number;
  perCpuSecond: number;
}

/**
 * Wall and CPU time: on a shared machine the wall clock also counts the time other
 * processes had the CPU, so both are reported.
 */
function timed(phase: string, commands: number, f: () => void): Row {
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  f();
  const cpu = process.cpuUsage(c0);
  const seconds = (performance.now() - t0) / 1000;
  const cpuSeconds = (cpu.user + cpu.system) / 1e6;
  return { phase, commands, seconds, cpuSeconds, perSecond: commands / seconds, perCpuSecond: commands / cpuSeconds };
}

/**
 * CPU ms of a fixed plain-JS loop (Map lookups and small allocations, like apply does):
 * a yardstick to compare runs on different or busy machines.
 */
function calibrate(): number {
  const map = new Map<string, { n: number }>();
  for (let i = 0; i < 100_000; i++) map.set(`l/${i}`, { n: i });
  const c0 = process.cpuUsage();
  let sum = 0;
  for (let i = 0; i < 1_000_000; i++) {
    sum += map.get(`l/${(i * 7919) % 100_000}`)!.n;
    map.set(`x${i % 1000}`, { n: i });
  }
  const cpu = process.cpuUsage(c0);
  if (sum < 0) console.log(sum); // keep the loop from being optimized away
  return (cpu.user + cpu.system) / 1000;
}

/** Heap bytes per idle session (opened, holding nothing) of a machine with `n` of them; run
 *  with --expose-gc for a figure (null without). */
function idleSessionBytes(n: number): number | null {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) return null;
  gc();
  const before = process.memoryUsage().heapUsed;
  const m = new LockMachine({ ...CONFIG, maxSessions: n });
  for (let i = 1; i <= n; i++) m.apply(i, { type: 'openSession', ttlMs: 30_000, label: 'host-12:4711' });
  gc();
  const bytes = (process.memoryUsage().heapUsed - before) / n;
  if (m.stats().sessions !== n) throw new Error(`opened ${m.stats().sessions} of ${n} sessions`);
  return bytes;
}

function main(): void {
  const rows: Row[] = [];
  const idleBytes = idleSessionBytes(200_000);
  const m = new LockMachine(CONFIG);
  const clients = new Clients(m, prng(SEED), false);
  rows.push(timed('populate: 10k openSession + 100k acquire', SESSIONS + LOCKS, () => clients.populate()));

  const t0 = performance.now();
  const start = m.snapshot();
  const populatedSnapshotMs = performance.now() - t0;

  const recorded = new Clients(m, prng(SEED + 1), true);
  recorded.adopt(clients);
  rows.push(timed('mixed: apply() of typed commands', OPS, () => {
    for (let i = 0; i < OPS; i++) recorded.step();
  }));

  let encoded: { index: number; data: Uint8Array }[] = [];
  rows.push(timed('encodeCommand (validate + msgpack)', OPS, () => {
    encoded = recorded.log.map(({ index, cmd }) => ({ index, data: encodeCommand(cmd, CONFIG) }));
  }));

  const replica = LockMachine.restore(start, CONFIG);
  rows.push(timed('mixed: applyRaw() of bytes (decode + validate + apply)', OPS, () => {
    for (const { index, data } of encoded) replica.applyRaw(index, data);
  }));

  let snap: Uint8Array = new Uint8Array();
  const snapshotRow = timed('snapshot', 1, () => {
    snap = m.snapshot();
  });
  let restored: LockMachine | null = null;
  const restoreRow = timed('restore', 1, () => {
    restored = LockMachine.restore(snap, CONFIG);
  });
  const calibration = calibrate();
  const replicaSnap = replica.snapshot();
  const identical = Buffer.from(replicaSnap).equals(Buffer.from(snap));
  const restoredIdentical = Buffer.from(restored!.snapshot()).equals(Buffer.from(snap));
  const stats = m.stats();

  const pad = (s: string, n: number): string => s.padEnd(n);
  console.log(`\nlockfsm apply throughput (node ${process.version}, ${cpus()[0]?.model ?? 'cpu'})\n`);
  const num = (n: number): string => Math.round(n).toLocaleString('en-US');
  console.log(`${pad('phase', 56)} ${pad('commands', 9)} ${pad('wall s', 7)} ${pad('cpu s', 7)} ${pad('cmds/s', 9)} cmds/cpu-s`);
  for (const r of rows) {
    console.log(
      `${pad(r.phase, 56)} ${pad(String(r.commands), 9)} ${pad(r.seconds.toFixed(3), 7)} ${pad(r.cpuSeconds.toFixed(3), 7)} ${pad(num(r.perSecond), 9)} ${num(r.perCpuSecond)}`,
    );
  }
  console.log(`\nstate after the mixed phase: ${JSON.stringify(stats)}`);
  console.log(`an idle session (200,000 open): ${idleBytes === null ? 'run node with --expose-gc for the figure' : `${idleBytes.toFixed(0)} bytes of heap`}`);
  console.log(`snapshot after populate: ${start.length.toLocaleString('en-US')} bytes in ${populatedSnapshotMs.toFixed(0)} ms`);
  const ms = (r: Row): string => `${(r.seconds * 1000).toFixed(0)} ms wall / ${(r.cpuSeconds * 1000).toFixed(0)} ms cpu`;
  console.log(`snapshot after mixed:    ${snap.length.toLocaleString('en-US')} bytes in ${ms(snapshotRow)}`);
  console.log(`restore of it:           ${ms(restoreRow)}`);
  console.log(
    `machine speed reference: 1M Map get+set of fresh objects took ${calibration.toFixed(0)} ms cpu ` +
      '(typically 100-200 ms on an idle modern core; scale the figures above by it)',
  );
  console.log(`apply() and applyRaw() end states byte-identical: ${identical}; restored snapshot identical: ${restoredIdentical}`);
  const outcomes = [...recorded.counts].sort((a, b) => b[1] - a[1]);
  console.log(`mixed outcomes: ${outcomes.map(([k, v]) => `${k} ${v}`).join(', ')}\n`);

  const out = {
    bench: 'lockfsm-apply',
    date: new Date().toISOString(),
    node: process.version,
    cpu: cpus()[0]?.model ?? null,
    workload: { sessions: SESSIONS, locks: LOCKS, sharedLocks: SHARED_LOCKS, sharedLimit: SHARED_LIMIT, ops: OPS, seed: SEED },
    rows,
    snapshot: {
      afterPopulateBytes: start.length,
      afterPopulateMs: populatedSnapshotMs,
      afterMixedBytes: snap.length,
      afterMixedMs: snapshotRow.seconds * 1000,
      afterMixedCpuMs: snapshotRow.cpuSeconds * 1000,
      restoreMs: restoreRow.seconds * 1000,
      restoreCpuMs: restoreRow.cpuSeconds * 1000,
    },
    calibrationCpuMs: calibration,
    idleSessionHeapBytes: idleBytes,
    deterministic: identical && restoredIdentical,
    stats,
    outcomes: Object.fromEntries(outcomes),
  };
  mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
  writeFileSync(new URL('./results/lockfsm-apply.json', import.meta.url), JSON.stringify(out, null, 2) + '\n');
  if (!identical || !restoredIdentical) {
    console.error('the replica diverged: the machine is not deterministic');
    process.exitCode = 1;
  }
}

main();
