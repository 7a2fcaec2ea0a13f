// One seed of the whole-node simulator: the World (world.ts) with SDK clients that acquire,
// hold, write fenced and unfenced keys, time out and release, under node crashes, pauses
// (leaders and holders), partitions both ways and one way, dropped frames, slow and full
// disks and wall-clock steps; then everything heals and the history is checked (check.ts).
import { LockClient, LockTimeoutError, type Lock, type WebSocketConstructor, type WebSocketLike } from '../../../src/client/index.js';
import { decodeFrame } from '../../../src/protocol/codec.js';
import { Prng } from '../../support/prng.js';
import { History } from './check.js';
import { PLANTED_LOCK_DELAY_MS, plant, type WholePlant } from './plants.js';
import type { SimNodeClock } from './scheduler.js';
import { World } from './world.js';

export interface WholeOptions {
  readonly seed: number;
  readonly nodes?: 3 | 5;
  /** Virtual milliseconds of the faulty phase. */
  readonly durationMs?: number;
  readonly clients?: number;
  readonly rollingConfig?: boolean;
  /** A deliberately wrong version of production code for this run (plants.ts). */
  readonly plant?: WholePlant;
  readonly trace?: (line: string) => void;
}

export interface WholeResult {
  readonly seed: number;
  readonly violation: string | null;
  readonly grants: number;
  readonly uses: number;
  readonly writes: number;
  readonly timeouts: number;
  readonly faults: number;
  readonly steps: number;
  readonly checkpointsCompared: number;
}

const LOCKS = ['A', 'B', 'C'];
const KEYS = ['k0', 'k1', 'k2'];
const TTL_MS = 2_000;

/** The SDK's safe deadline for `session` (its clock's ms), read from its session manager: a
 *  harness's look inside, for the lease-rule check only. */
function sdkSafeDeadline(client: LockClient | null, session: number): number | null {
  const active = (client as unknown as { sessions?: { active?: { id: number; safeDeadline: number } | null } } | null)?.sessions?.active;
  return active && active.id === session ? active.safeDeadline : null;
}

/** A WebSocket class that reports each sessionExpired event it delivers, before the SDK sees it. */
function watchExpiries(Base: WebSocketConstructor, onExpired: (session: number) => void): WebSocketConstructor {
  return class extends (Base as unknown as new (url: string) => WebSocketLike & { deliver(bytes: Uint8Array): void }) {
    override deliver(bytes: Uint8Array): void {
      const frame = decodeFrame(bytes) as { event?: string; session?: number };
      if (frame.event === 'sessionExpired' && typeof frame.session === 'number') onExpired(frame.session);
      super.deliver(bytes);
    }
  } as unknown as WebSocketConstructor;
}

/** The globals a simulated run must not touch: each would make a run depend on more than
 *  its seed. Date.now and Math.random come from the seed; a global timer is a bug of the code
 *  under test (it bypasses the node's clock), so it throws. */
function sealGlobals(rng: Prng, wall: () => number): () => void {
  const saved = { random: Math.random, now: Date.now, setTimeout: globalThis.setTimeout, setInterval: globalThis.setInterval };
  Math.random = () => rng.float();
  Date.now = () => wall();
  const refuse = (what: string) => (() => {
    throw new Error(`${what} called during a simulated run: the code under test must use its injected clock`);
  }) as never;
  globalThis.setTimeout = refuse('setTimeout');
  globalThis.setInterval = refuse('setInterval');
  return () => {
    Math.random = saved.random;
    Date.now = saved.now;
    globalThis.setTimeout = saved.setTimeout;
    globalThis.setInterval = saved.setInterval;
  };
}

export async function runWholeSeed(o: WholeOptions): Promise<WholeResult> {
  const world = new World({
    seed: o.seed,
    nodes: o.nodes ?? (o.seed % 2 === 0 ? 3 : 5),
    rollingConfig: o.rollingConfig ?? o.seed % 3 === 0,
    ...(o.plant === 'localSettings' ? { plantedFile: { lockDelayMs: PLANTED_LOCK_DELAY_MS, maxSessions: 4 } } : {}),
    // Every fourth seed gives the clients a foreign cluster's node among their endpoints.
    foreign: o.plant === 'foreignGrant' || o.seed % 4 === 1,
    ...(o.trace ? { trace: o.trace } : {}),
  });
  const unplant = o.plant ? plant(o.plant) : () => {};
  const { s } = world;
  const rng = new Prng(world.rng.u32());
  const history = new History(() => s.time);
  const unseal = sealGlobals(new Prng(rng.u32()), () => 1_800_000_000_000 + s.time);
  let faults = 0;
  let running = true;
  try {
    for (const id of world.ids) world.start(id);
    world.startForeign();
    await s.runUntil(1_500);

    const clients: { name: string; clock: SimNodeClock; client: Promise<LockClient | null> }[] = [];
    for (let i = 0; i < (o.clients ?? 4); i++) {
      const name = `c${i + 1}`;
      const clock = s.nodeClock(name, (rng.float() - 0.5) * 0.008, 0);
      const crng = new Prng(rng.u32());
      // Half the clients know only one node (their own zone's): what they send a follower is
      // forwarded to the leader. The others follow the leader.
      const own = i % 2 === 1 ? [world.endpoints[i % world.endpoints.length]!] : world.endpoints;
      const endpoints = world.foreignUrl ? [...own, world.foreignUrl] : own;
      let sdk: LockClient | null = null;
      const WebSocket = watchExpiries(world.sockets.webSocketFor(name), (session) => {
        const deadline = sdkSafeDeadline(sdk, session);
        // The lease rule: the cluster never ends a session before the client's safe deadline
        // (the client's clock converted to true time).
        if (deadline !== null && s.time < deadline / (1 + clock.drift)) history.expiredEarly(name, session, deadline / (1 + clock.drift));
      });
      // The clients are told which cluster they use (the SDK pins it), so a foreign node
      // among their endpoints is refused however they reach it.
      const client = LockClient.connect({ endpoints, clusterId: world.clusterId, WebSocket, clock: clock.sdk(), ttlMs: TTL_MS, random: () => crng.float(), requestTimeoutMs: 4_000, onTrustViolation: () => {} }).then(
        (c) => (sdk = c),
        () => null,
      );
      clients.push({ name, clock, client });
      void clientLoop(name, clock, client, crng);
    }

    // ---- the faulty phase ----
    const end = s.time + (o.durationMs ?? 12_000);
    const faultRng = new Prng(rng.u32());
    const scheduleFault = (): void => {
      s.schedule('world', faultRng.range(150, 900), () => {
        if (!running || s.time > end) return;
        faults++;
        inject(faultRng);
        scheduleFault();
      });
    };
    scheduleFault();
    await s.runUntil(end);

    // ---- heal, and let the cluster settle ----
    running = false;
    world.heal();
    world.wire.dropRate = 0;
    for (const id of world.ids) {
      const n = world.sim.get(id)!;
      n.disk.failure = null;
      n.disk.latencyMs = () => 0.2;
      if (n.fatal?.includes('disk')) n.fatal = null;
      world.resume(id);
      world.start(id);
    }
    for (const c of clients) s.resume(c.name);
    await s.runUntil(s.time + 6_000);
    for (const c of clients) await closeWithin(c.client);

    let violation: string | null = null;
    try {
      const checker = await s.drive(
        LockClient.connect({ endpoints: world.endpoints, WebSocket: world.sockets.webSocketFor('checker'), clock: world.sim.get(world.ids[0]!)!.clock.sdk(), ttlMs: TTL_MS }),
        20_000,
        'a client connecting after healing',
      );
      violation = await s.drive(runChecks(checker), 20_000, 'the final checks');
      await closeWithin(Promise.resolve(checker));
    } catch (e) {
      const nodes = world.ids.map((id) => {
        const st = world.status(id);
        return st ? `${id} ${st.role} term ${st.term} leader ${st.leader} commit ${st.commitIndex} applied ${st.appliedIndex}` : `${id} down (${world.sim.get(id)!.fatal ?? 'not running'})`;
      });
      violation = `after healing: ${e instanceof Error ? e.message : String(e)} [${nodes.join('; ')}]`;
    }
    violation ??= history.violation();
    violation ??= digestViolation();
    const compared = checkpoints();
    return { seed: o.seed, violation, grants: history.grants.length, uses: history.useCount, writes: history.writes.length, timeouts: history.timeouts.length, faults, steps: s.steps, checkpointsCompared: compared };
  } catch (err) {
    return { seed: o.seed, violation: `the run threw: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`, grants: history.grants.length, uses: history.useCount, writes: history.writes.length, timeouts: history.timeouts.length, faults, steps: s.steps, checkpointsCompared: 0 };
  } finally {
    await s.drive(world.stopAll(), 10_000, 'stopping the nodes').catch(() => {});
    unseal();
    unplant();
  }

  /** Closing a client waits on virtual time: run the scheduler meanwhile. */
  async function closeWithin(client: Promise<LockClient | null>): Promise<void> {
    await s.drive(client.then((c) => c?.close()), 5_000, 'closing a client').catch(() => {});
  }

  async function clientLoop(name: string, clock: SimNodeClock, connecting: Promise<LockClient | null>, crng: Prng): Promise<void> {
    const client = await connecting;
    if (!client) return;
    const sleep = (ms: number) => new Promise<void>((r) => clock.setTimeout(r, ms));
    while (running) {
      await sleep(crng.range(5, 200));
      if (!running) break;
      const x = crng.float();
      try {
        if (x < 0.7) await holdLock(name, client, crng, sleep);
        else await writeKey(name, client, crng);
      } catch (e) {
        history.error(name, e);
      }
    }
  }

  async function holdLock(name: string, client: LockClient, crng: Prng, sleep: (ms: number) => Promise<void>): Promise<void> {
    const lock = crng.pick(LOCKS);
    const waitMs = crng.pick([0, 300, 1_500]);
    const asked = s.time;
    let held: Lock;
    try {
      held = await client.acquire(lock, { waitMs });
    } catch (e) {
      if (e instanceof LockTimeoutError) history.timedOut(name, client.sessionId, lock, asked);
      throw e;
    }
    const hold = history.granted(name, lock, held.token, asked);
    for (let i = crng.range(0, 4); i > 0 && running; i--) {
      await sleep(crng.range(10, 400));
      // A use: the holder acts only while it believes it holds the lock (the SDK's rule).
      if (!held.held) break;
      history.used(hold);
      if (crng.chance(0.4)) {
        const value = `${name}:${held.token}:${i}`;
        const asked2 = s.time;
        const r = await held.put(`fenced/${lock}`, value);
        history.wrote(`fenced/${lock}`, value, r.revision, asked2);
      }
    }
    if (crng.chance(0.9)) await held.release();
  }

  async function writeKey(name: string, client: LockClient, crng: Prng): Promise<void> {
    const key = crng.pick(KEYS);
    const value = `${name}:${s.time.toFixed(1)}`;
    const asked = s.time;
    const r = await client.put(key, value);
    history.wrote(key, value, r.revision, asked);
  }

  function inject(f: Prng): void {
    const up = world.running();
    const id = f.pick(world.ids);
    const x = f.float();
    if (x < 0.18 && up.length > Math.floor(world.ids.length / 2)) {
      world.kill(id);
      s.schedule('world', f.range(200, 2_500), () => world.start(id));
    } else if (x < 0.32) {
      world.pause(id);
      s.schedule('world', f.range(100, 3_000), () => world.resume(id));
    } else if (x < 0.45) {
      const others = world.ids.filter((o2) => o2 !== id);
      world.partition(id, others, f.chance(0.3));
      s.schedule('world', f.range(300, 3_000), () => world.heal());
    } else if (x < 0.55) {
      const c = `c${f.range(1, o.clients ?? 4)}`;
      world.trace(`pause client ${c}`);
      s.pause(c);
      s.schedule('world', f.range(200, 4_000), () => (world.trace(`resume client ${c}`), s.resume(c)));
    } else if (x < 0.63) {
      const clock = world.sim.get(id)!.clock;
      const step = f.pick([3_600_000, -600_000, 120_000]);
      world.trace(`wall clock of ${id} steps ${step} ms`);
      clock.wallOffset += step;
    } else if (x < 0.72) {
      world.wire.dropRate = f.pick([0, 0.01, 0.05]);
      world.trace(`drop rate ${world.wire.dropRate}`);
    } else if (x < 0.8) {
      const disk = world.sim.get(id)!.disk;
      const ms = f.pick([0.2, 5, 40]);
      world.trace(`fsync of ${id} takes ${ms} ms`);
      disk.latencyMs = () => ms;
    } else if (x < 0.84) {
      const disk = world.sim.get(id)!.disk;
      world.trace(`disk of ${id} is full`);
      disk.failure = Object.assign(new Error('ENOSPC: no space left on device (the disk is full)'), { code: 'ENOSPC' });
      s.schedule('world', f.range(300, 2_000), () => {
        disk.failure = null;
        const n = world.sim.get(id)!;
        n.fatal = null;
        world.trace(`disk of ${id} has room again`);
        world.start(id);
      });
    }
  }

  /** The final checks through a fresh client: every acknowledged write is there, and a
   *  timed-out acquire left nothing held or queued. */
  async function runChecks(checker: LockClient): Promise<string | null> {
    for (const key of new Set(history.writes.map((w) => w.key))) {
      const got = await checker.kvGet(key);
      const problem = history.checkFinalValue(key, got ? { value: new TextDecoder().decode(got.value), revision: got.revision } : null);
      if (problem) return problem;
    }
    for (const t of history.timeouts) {
      if (t.session === null || history.acquiredAgain(t)) continue;
      const info = await checker.get(t.lock);
      if (info.holders.some((h) => h.session === t.session) || info.waiters.some((w) => w.session === t.session)) {
        return `LockTimeoutError left something behind: ${t.client}'s session ${t.session} still holds or waits for ${t.lock} (timed out at ${t.at.toFixed(1)} ms)`;
      }
    }
    return null;
  }

  function checkpoints(): number {
    const seen = world.ids.map((id) => world.status(id)?.stateDigest).filter((d) => d !== undefined);
    return seen.length;
  }

  function digestViolation(): string | null {
    for (const id of world.ids) {
      const st = world.status(id);
      const w = st?.warnings?.find((x) => x.startsWith('state differs'));
      if (w) return `${id}: ${w}`;
    }
    const byIndex = new Map<number, { id: string; digest: string }>();
    for (const id of world.ids) {
      const d = world.status(id)?.stateDigest;
      if (!d) continue;
      const other = byIndex.get(d.index);
      if (other && other.digest !== d.digest) return `${id} and ${other.id} hold different states at checkpoint ${d.index}`;
      byIndex.set(d.index, { id, digest: d.digest });
    }
    return null;
  }
}
