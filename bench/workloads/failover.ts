// failover (the client side): `clients` LockClients cycle acquire/release on locks of their
// own while the orchestrator disrupts the leader, and `probes` more stand by idle. For each
// disruption the client process is told when it happened; it starts an acquire on every
// probe at once and answers with the time from the disruption to the first successful
// acquire that the old leader cannot have granted:
//   kill      the leader was SIGKILLed at `at`: the first acquire begun after `at` (a new
//             entry, so granted by a new leader and answered through a survivor; an answer
//             the dead leader sent just before dying does not count);
//   transfer  transferLeader was sent at `at`, when the old leader's log ended at
//             `boundaryIndex`: the first acquire granted after `at` by an entry past it,
//             i.e. by the new leader (the old one takes no proposals once the transfer began).
import type { LockClient } from '../../src/client/index.js';
import { epochMs, sleep } from '../lib/clock.js';
import { closeClients, connectClients } from '../lib/clients.js';
import { errorText, type WorkloadTiming } from '../lib/spec.js';

export interface FailoverSpec extends WorkloadTiming {
  readonly kind: 'failover';
  readonly clients: number;
  readonly probes: number;
}

export type Disruption =
  | { readonly event: 'kill'; readonly at: number }
  | { readonly event: 'transfer'; readonly at: number; readonly boundaryIndex: number };

export interface RecoveryTry {
  readonly event: Disruption['event'];
  /** ms from the disruption to the first acquire that qualifies; null if none within the timeout. */
  readonly firstAcquireMs: number | null;
}

export interface FailoverResult {
  readonly kind: 'failover';
  readonly clients: number;
  readonly tries: readonly RecoveryTry[];
  readonly acquires: number;
  readonly errors: number;
  readonly firstError: string | null;
  /** The first errors, with when and where (the time is ms after the first disruption, or
   *  before it when negative). */
  readonly errorLog: readonly { readonly atMs: number; readonly client: string; readonly error: string; readonly session: number | null }[];
}

interface Completion {
  readonly startedAt: number;
  readonly at: number;
  readonly token: number;
}

const HISTORY = 4_096;

export class FailoverClients {
  private readonly history: Completion[] = [];
  private waiters: { test: (c: Completion) => boolean; resolve: (c: Completion) => void }[] = [];
  private stopped = false;
  private loops: Promise<void>[] = [];
  private acquires = 0;
  private errors = 0;
  private firstError: string | null = null;
  private readonly errorLog: { at: number; client: string; error: string; session: number | null }[] = [];
  private firstDisruptionAt: number | null = null;
  private readonly tries: RecoveryTry[] = [];

  private constructor(
    private readonly spec: FailoverSpec,
    private readonly clients: LockClient[],
    private readonly probes: LockClient[],
  ) {}

  static async start(spec: FailoverSpec): Promise<FailoverClients> {
    const all = await connectClients(spec.endpoints, spec.clients + spec.probes);
    const f = new FailoverClients(spec, all.slice(0, spec.clients), all.slice(spec.clients));
    f.loops = f.clients.map((c, i) => f.cycle(c, `bench/failover/c${i}`));
    return f;
  }

  /** Time from the disruption to the first acquire that qualifies (null after timeoutMs). */
  async recovery(d: Disruption, timeoutMs = 20_000): Promise<number | null> {
    this.firstDisruptionAt ??= d.at;
    const test = (c: Completion): boolean => c.at > d.at && (d.event === 'kill' ? c.startedAt > d.at : c.token > d.boundaryIndex);
    const probing = this.probes.map((p, i) => this.probe(p, `bench/failover/p${i}`));
    const seen = this.history.find(test);
    const found =
      seen ??
      (await new Promise<Completion | null>((resolve) => {
        const timer = setTimeout(() => {
          this.waiters = this.waiters.filter((w) => w.test !== test);
          resolve(null);
        }, timeoutMs);
        this.waiters.push({
          test,
          resolve: (c) => {
            clearTimeout(timer);
            resolve(c);
          },
        });
      }));
    await Promise.all(probing);
    const ms = found ? found.at - d.at : null;
    this.tries.push({ event: d.event, firstAcquireMs: ms });
    return ms;
  }

  async finish(): Promise<FailoverResult> {
    this.stopped = true;
    await Promise.all(this.loops);
    await closeClients([...this.clients, ...this.probes]);
    return {
      kind: 'failover',
      clients: this.spec.clients,
      tries: this.tries,
      acquires: this.acquires,
      errors: this.errors,
      firstError: this.firstError,
      errorLog: this.errorLog.map((e) => ({ atMs: Math.round(e.at - (this.firstDisruptionAt ?? e.at)), client: e.client, error: e.error, session: e.session })),
    };
  }

  private async cycle(client: LockClient, name: string): Promise<void> {
    while (!this.stopped) {
      if (!(await this.probe(client, name))) await sleep(10);
    }
  }

  /** One acquire/release, begun now; false when it failed (the error is noted). */
  private async probe(client: LockClient, name: string): Promise<boolean> {
    try {
      const startedAt = epochMs();
      const lock = await client.acquire(name);
      this.record({ startedAt, at: epochMs(), token: lock.token });
      await lock.release();
      return true;
    } catch (e) {
      this.noteError(e, name, client);
      return false;
    }
  }

  private noteError(e: unknown, name: string, client: LockClient): void {
    this.errors++;
    this.firstError ??= errorText(e);
    if (this.errorLog.length < 20) this.errorLog.push({ at: epochMs(), client: name, error: errorText(e), session: client.sessionId });
  }

  private record(c: Completion): void {
    this.acquires++;
    this.history.push(c);
    if (this.history.length > HISTORY) this.history.splice(0, this.history.length - HISTORY);
    const ready = this.waiters.filter((w) => w.test(c));
    if (ready.length === 0) return;
    this.waiters = this.waiters.filter((w) => !ready.includes(w));
    for (const w of ready) w.resolve(c);
  }
}
