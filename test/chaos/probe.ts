// The harness's own client: it measures availability (a linearizable read every
// PROBE_EVERY_MS; the gaps between successful reads are the time the cluster could not
// serve), waits for the cluster to serve writes again after the faults heal, and reads the
// final state. Its reads are recorded in the history like any client's, so the checker
// holds them to the same model. The harness is never paused, so its windows need no slack.
import { LockClient } from '../../src/client/index.js';
import type { HistoryRecorder } from './recorder.js';

const PROBE_EVERY_MS = 100;
const PROBE_TIMEOUT_MS = 1_000;
/** A gap between successful reads longer than this counts as unavailability. */
const UNAVAILABLE_AFTER_MS = 500;

export interface Availability {
  /** Sum of the gaps between successful probe reads longer than UNAVAILABLE_AFTER_MS. */
  readonly unavailableMs: number;
  readonly longestGapMs: number;
  /** [from, to] of each such gap, on the run clock. */
  readonly gaps: readonly (readonly [number, number])[];
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export class ClusterProbe {
  private client: LockClient | null = null;
  private running = false;
  private loop: Promise<void> = Promise.resolve();
  private lastOkMs: number | null = null;
  private readonly gaps: [number, number][] = [];
  private counter = 0;

  constructor(
    private readonly endpoints: readonly string[],
    private readonly locks: readonly string[],
    private readonly election: string,
    private readonly recorder: HistoryRecorder,
    private readonly now: () => number,
  ) {}

  async connect(): Promise<void> {
    this.client = await LockClient.connect({ endpoints: this.endpoints, ttlMs: 10_000, attemptTimeoutMs: 500, requestTimeoutMs: 5_000 });
  }

  /** Starts probing in the background. */
  start(): void {
    this.running = true;
    this.lastOkMs = this.now();
    this.loop = (async () => {
      let i = 0;
      while (this.running) {
        const began = this.now();
        const ok = await this.read(this.locks[i++ % this.locks.length]!, PROBE_TIMEOUT_MS);
        if (ok) this.sawService(this.now());
        await sleep(Math.max(0, PROBE_EVERY_MS - (this.now() - began)));
      }
    })();
  }

  async stopProbing(): Promise<void> {
    this.running = false;
    await this.loop;
  }

  availability(): Availability {
    const longest = this.gaps.reduce((m, [a, b]) => Math.max(m, b - a), 0);
    const total = this.gaps.reduce((s, [a, b]) => s + (b - a), 0);
    return { unavailableMs: total, longestGapMs: longest, gaps: this.gaps };
  }

  /**
   * Resolves with the time it took, from `sinceMs`, until a write went through the log;
   * null when that did not happen within `boundMs`.
   */
  async timeToServeWrites(sinceMs: number, boundMs: number): Promise<number | null> {
    for (;;) {
      try {
        await this.client!.put('chaos/probe', `write ${++this.counter}`, { timeoutMs: PROBE_TIMEOUT_MS });
        return this.now() - sinceMs;
      } catch {
        if (this.now() - sinceMs > boundMs) return null;
        await sleep(50);
      }
    }
  }

  /** Reads `lock` once (recorded); true when it was answered. */
  async read(lock: string, timeoutMs = PROBE_TIMEOUT_MS): Promise<{ holders: { session: number; token: number }[] } | null> {
    const id = `probe:${++this.counter}`;
    const invokeMs = this.now();
    try {
      const info = await this.client!.get(lock, { timeoutMs });
      const holders = info.holders.map((h) => ({ session: h.session, token: h.token }));
      this.recorder.record({ id, process: 'probe', op: 'read', args: { lock }, invokeMs, completeMs: this.now(), outcome: 'ok', result: { holders } });
      return { holders };
    } catch (e) {
      this.recorder.record({
        id,
        process: 'probe',
        op: 'read',
        args: { lock },
        invokeMs,
        completeMs: this.now(),
        outcome: 'unknown',
        error: e instanceof Error ? e.message : String(e),
      });
      return null;
    }
  }

  /** Reads the election's leader once (recorded); undefined when unanswered. */
  async readLeader(): Promise<{ session: number; token: number } | null | undefined> {
    const id = `probe:${++this.counter}`;
    const invokeMs = this.now();
    const election = this.election;
    try {
      const s = await this.client!.election(election).leader();
      if (s.leader !== null && s.token === null) return undefined; // malformed: not a read the model can use
      const leader = s.leader === null ? null : { session: s.leader, token: s.token!, value: s.value };
      this.recorder.record({ id, process: 'probe', op: 'leader', args: { election }, invokeMs, completeMs: this.now(), outcome: 'ok', result: { leader } });
      return leader;
    } catch {
      return undefined;
    }
  }

  async close(): Promise<void> {
    await this.client?.close();
  }

  private sawService(atMs: number): void {
    if (this.lastOkMs !== null && atMs - this.lastOkMs > UNAVAILABLE_AFTER_MS) this.gaps.push([this.lastOkMs, atMs]);
    this.lastOkMs = atMs;
  }
}
