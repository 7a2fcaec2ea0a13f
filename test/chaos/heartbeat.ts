// The heartbeat client: a client nobody faults. Every HEARTBEAT_EVERY_MS it acquires a lock
// of its own with `waitMs: 1000` and releases it, with the SDK's default options (but the
// run's TTL), so each gap between its successful acquires is time the service could not
// serve a well-behaved client (outage.ts attributes the gaps to faults). It also checks the
// SDK's deadline promise: an acquire that settles later than its waitMs plus the stated
// bound is counted as an overrun. Its operations stay out of the checked history: the lock
// is nobody else's, and the measurement is the point.
import { LockClient, LockTimeoutError } from '../../src/client/index.js';

export const HEARTBEAT_LOCK = 'chaos/heartbeat';
const HEARTBEAT_EVERY_MS = 100;
const WAIT_MS = 1_000;
/** The SDK promises to settle a call within its deadline plus this (docs/protocol.md). */
export const DEADLINE_BOUND_MS = 100;

export interface HeartbeatResult {
  /** Run-clock times of the successful acquires. */
  readonly successes: readonly number[];
  readonly attempts: number;
  readonly timeouts: number;
  readonly otherErrors: number;
  /** Acquires that settled later than waitMs + DEADLINE_BOUND_MS: [settled after, ms]. */
  readonly overruns: readonly number[];
  /** Releases that took longer than a second (each one delays the next acquire). */
  readonly slowReleases: number;
  /** Every attempt, for reading a gap: run-clock times, outcome, the error's message. */
  readonly log: readonly HeartbeatAttempt[];
}

export interface HeartbeatAttempt {
  readonly invokedMs: number;
  readonly settledMs: number;
  readonly outcome: 'granted' | 'timeout' | 'error';
  readonly releasedMs?: number;
  readonly error?: string;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, Math.max(0, ms)));
}

export class HeartbeatClient {
  private client: LockClient | null = null;
  private running = false;
  private loop: Promise<void> = Promise.resolve();
  private readonly successes: number[] = [];
  private readonly overruns: number[] = [];
  private attempts = 0;
  private timeouts = 0;
  private otherErrors = 0;
  private slowReleases = 0;
  private readonly log: HeartbeatAttempt[] = [];

  constructor(
    private readonly endpoints: readonly string[],
    private readonly ttlMs: number,
    private readonly now: () => number,
  ) {}

  async connect(): Promise<void> {
    this.client = await LockClient.connect({ endpoints: this.endpoints, ttlMs: this.ttlMs, label: 'chaos-heartbeat' });
  }

  start(): void {
    this.running = true;
    this.loop = (async () => {
      while (this.running) {
        const began = this.now();
        await this.beat();
        await sleep(HEARTBEAT_EVERY_MS - (this.now() - began));
      }
    })();
  }

  async stop(): Promise<HeartbeatResult> {
    this.running = false;
    await this.loop;
    await this.client?.close().catch(() => {});
    return {
      successes: this.successes,
      attempts: this.attempts,
      timeouts: this.timeouts,
      otherErrors: this.otherErrors,
      overruns: this.overruns,
      slowReleases: this.slowReleases,
      log: this.log,
    };
  }

  private async beat(): Promise<void> {
    const client = this.client!;
    this.attempts++;
    const invoked = this.now();
    let lock;
    try {
      lock = await client.acquire(HEARTBEAT_LOCK, { waitMs: WAIT_MS });
    } catch (e) {
      this.settled(invoked);
      if (e instanceof LockTimeoutError) this.timeouts++;
      else this.otherErrors++;
      const outcome = e instanceof LockTimeoutError ? 'timeout' : 'error';
      this.log.push({ invokedMs: invoked, settledMs: this.now(), outcome, error: e instanceof Error ? e.message : String(e) });
      return;
    }
    const granted = this.now();
    this.settled(invoked);
    this.successes.push(granted);
    let error: string | undefined;
    try {
      await lock.release();
    } catch (e) {
      this.otherErrors++;
      error = `release: ${e instanceof Error ? e.message : String(e)}`;
    }
    this.log.push({ invokedMs: invoked, settledMs: granted, outcome: 'granted', releasedMs: this.now(), ...(error ? { error } : {}) });
    if (this.now() - granted > 1_000) this.slowReleases++;
  }

  private settled(invoked: number): void {
    const took = this.now() - invoked;
    if (took > WAIT_MS + DEADLINE_BOUND_MS) this.overruns.push(took);
  }
}
