// The TypeScript SDK's conformance runner: plays every scenario of scenarios.json against the
// cluster of PALISADE_ENDPOINTS, with PALISADE_CONTROL for faults (test/conformance/README.md).
//   node --import tsx test/conformance/runner.ts SCENARIOS.json
//   node --import tsx test/conformance/runner.ts --bench N     (acquire + release pairs)
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import WebSocket from 'ws';
import { FencedError, LockClient, LockTimeoutError, type Leadership, type Lock, type WebSocketConstructor } from '../../src/client/index.js';

interface Step {
  readonly op: string;
  readonly [field: string]: unknown;
}
interface Scenario {
  readonly id: string;
  readonly steps: readonly Step[];
}

const endpoints = (process.env.PALISADE_ENDPOINTS ?? '').split(',').filter(Boolean).map((u) => u.replace(/^http/, 'ws'));
const control = process.env.PALISADE_CONTROL ?? '';

async function post(path: string): Promise<Record<string, unknown>> {
  const res = await fetch(control + path, { method: 'POST' });
  const body = (await res.json()) as Record<string, unknown>;
  if (res.status !== 200) throw new Error(`control ${path}: ${String(body.error)}`);
  return body;
}

class Failure extends Error {}
function check(ok: boolean, what: string): void {
  if (!ok) throw new Failure(what);
}
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls `cond` every 50 ms until it holds or `withinMs` passes (0: once). */
async function eventually(withinMs: number, what: string, cond: () => Promise<boolean> | boolean): Promise<void> {
  const deadline = performance.now() + withinMs;
  for (;;) {
    if (await cond()) return;
    if (performance.now() >= deadline) throw new Failure(what);
    await sleep(50);
  }
}

interface Actor {
  client: LockClient;
  relay?: string;
  locks: Map<string, Lock>;
  leads: Map<string, Leadership>;
}

type Outcome = { kind: 'granted'; token: number } | { kind: 'leader'; token: number } | { kind: 'timeout' } | { kind: 'busy' };

/** Values seen by an observe or a watch, and how far `observed`/`watched` have matched. */
interface Seen {
  items: { key?: string; value: string | null }[];
  cursor: number;
  close: () => void;
}

class Run {
  private readonly actors = new Map<string, Actor>();
  private readonly vars = new Map<string, number>();
  private readonly tasks = new Map<string, Promise<Outcome>>();
  private readonly seen = new Map<string, Seen>();
  private reader: LockClient | null = null;

  constructor(private readonly prefix: string) {}

  private name(x: unknown): string {
    return this.prefix + String(x);
  }

  private actor(step: Step): Actor {
    const a = this.actors.get(String(step.actor));
    if (!a) throw new Failure(`no actor ${String(step.actor)}`);
    return a;
  }

  private async read(): Promise<LockClient> {
    this.reader ??= await LockClient.connect({ endpoints });
    return this.reader;
  }

  private expect(step: Step, outcome: Outcome): void {
    check(outcome.kind === step.expect, `${step.op} ${String(step.lock ?? step.election ?? '')}: expected ${String(step.expect)}, got ${outcome.kind}`);
    if (typeof step.token === 'string' && 'token' in outcome) this.vars.set(step.token, outcome.token);
  }

  private acquire(a: Actor, step: Step): Promise<Outcome> {
    const name = this.name(step.lock);
    return a.client.acquire(name, { waitMs: Number(step.waitMs) }).then(
      (lock): Outcome => {
        a.locks.set(name, lock);
        return { kind: 'granted', token: lock.token };
      },
      (e: unknown): Outcome => {
        if (e instanceof LockTimeoutError) return { kind: 'timeout' };
        throw e;
      },
    );
  }

  private campaign(a: Actor, step: Step): Promise<Outcome> {
    const name = this.name(step.election);
    const signal = AbortSignal.timeout(Number(step.waitMs));
    return a.client
      .election(name)
      .campaign(String(step.value), { signal })
      .then(
        (lead): Outcome => {
          a.leads.set(name, lead);
          return { kind: 'leader', token: lead.token };
        },
        (e: unknown): Outcome => {
          if (signal.aborted) return { kind: 'timeout' };
          throw e;
        },
      );
  }

  private collect(task: string, source: AsyncIterable<{ key?: string; value: string | null }>, close: () => void): void {
    const seen: Seen = { items: [], cursor: 0, close };
    this.seen.set(task, seen);
    void (async () => {
      for await (const item of source) seen.items.push(item);
    })().catch(() => {});
  }

  private async matched(step: Step): Promise<void> {
    const seen = this.seen.get(String(step.task));
    if (!seen) throw new Failure(`no task ${String(step.task)}`);
    const key = step.key === undefined ? undefined : this.name(step.key);
    await eventually(Number(step.withinMs ?? 0), `${step.op}: ${key ?? ''}=${String(step.value)} not seen (saw ${JSON.stringify(seen.items)})`, () => {
      for (let i = seen.cursor; i < seen.items.length; i++) {
        const it = seen.items[i]!;
        if ((key === undefined || it.key === key) && it.value === step.value) {
          seen.cursor = i + 1;
          return true;
        }
      }
      return false;
    });
  }

  async step(step: Step): Promise<void> {
    switch (step.op) {
      case 'open': {
        let relay: string | undefined;
        if (step.via === 'relay') relay = String((await post('/relay')).hostPort);
        const client = await LockClient.connect({
          endpoints: relay ? [`ws://${relay}`] : endpoints,
          // The SDK learns the other members from hello and dials them too: through a relay
          // actor, every connection goes through the relay, whichever node it names.
          ...(relay ? { WebSocket: throughRelay(relay) } : {}),
          label: `conformance-${String(step.actor)}`,
          ...(step.ttlMs !== undefined ? { ttlMs: Number(step.ttlMs) } : {}),
        });
        this.actors.set(String(step.actor), { client, ...(relay ? { relay } : {}), locks: new Map(), leads: new Map() });
        return;
      }
      case 'acquire': {
        const t0 = performance.now();
        this.expect(step, await this.acquire(this.actor(step), step));
        if (step.withinMs !== undefined) check(performance.now() - t0 <= Number(step.withinMs), `acquire took ${Math.round(performance.now() - t0)} ms`);
        return;
      }
      case 'acquireAsync':
        this.tasks.set(String(step.task), this.acquire(this.actor(step), step));
        return;
      case 'campaign':
        return this.expect(step, await this.campaign(this.actor(step), step));
      case 'campaignAsync':
        this.tasks.set(String(step.task), this.campaign(this.actor(step), step));
        return;
      case 'await': {
        const task = this.tasks.get(String(step.task));
        if (!task) throw new Failure(`no task ${String(step.task)}`);
        return this.expect(step, await task);
      }
      case 'try': {
        const a = this.actor(step);
        const name = this.name(step.lock);
        const lock = await a.client.tryAcquire(name);
        if (lock) a.locks.set(name, lock);
        return this.expect(step, lock ? { kind: 'granted', token: lock.token } : { kind: 'busy' });
      }
      case 'release':
        await this.actor(step).locks.get(this.name(step.lock))?.release();
        return;
      case 'resign':
        await this.actor(step).leads.get(this.name(step.election))?.resign();
        return;
      case 'lost': {
        const lock = this.actor(step).locks.get(this.name(step.lock));
        return eventually(Number(step.withinMs ?? 0), 'the lock is not lost', () => lock?.signal.aborted === true);
      }
      case 'held': {
        const lock = this.actor(step).locks.get(this.name(step.lock));
        const until = performance.now() + Number(step.forMs ?? 0);
        do {
          check(lock?.signal.aborted === false, 'the lock was lost');
          await sleep(100);
        } while (performance.now() < until);
        return;
      }
      case 'lockState': {
        const reader = await this.read();
        const name = this.name(step.lock);
        let last = '';
        return eventually(Number(step.withinMs ?? 0), `lock state ${JSON.stringify({ holders: step.holders, waiters: step.waiters })}, saw ${last}`, async () => {
          const info = await reader.get(name);
          last = JSON.stringify({ holders: info.holders.length, waiters: info.waiters.length });
          return (step.holders === undefined || info.holders.length === step.holders) && (step.waiters === undefined || info.waiters.length === step.waiters);
        });
      }
      case 'put': {
        const f = step.fence as { lock: string; token: string } | undefined;
        const fence = f ? { lock: this.name(f.lock), token: this.vars.get(f.token)! } : undefined;
        let got: string;
        try {
          await this.actor(step).client.put(this.name(step.key), String(step.value), fence ? { fence } : {});
          got = 'ok';
        } catch (e) {
          if (!(e instanceof FencedError)) throw e;
          got = 'fenced';
        }
        return check(got === step.expect, `put: expected ${String(step.expect)}, got ${got}`);
      }
      case 'get': {
        const entry = await (await this.read()).kvGet(this.name(step.key));
        const value = entry ? Buffer.from(entry.value).toString('utf8') : null;
        return check(value === step.value, `get: ${String(value)}, expected ${String(step.value)}`);
      }
      case 'greater': {
        const [a, b] = [this.vars.get(String(step.a)), this.vars.get(String(step.b))];
        return check(a !== undefined && b !== undefined && a > b, `${String(step.a)}=${a} is not greater than ${String(step.b)}=${b}`);
      }
      case 'observe': {
        const observer = this.actor(step).client.election(this.name(step.election)).observe();
        return this.collect(String(step.task), mapAsync(observer, (s) => ({ value: s.value })), () => observer.close());
      }
      case 'watch': {
        const watch = this.actor(step).client.watch(this.name(step.prefix), { includeExisting: true });
        return this.collect(String(step.task), mapAsync(watch, (c) => ({ key: c.key, value: c.value ? Buffer.from(c.value).toString('utf8') : null })), () => watch.close());
      }
      case 'observed':
      case 'watched':
        return this.matched(step);
      case 'killLeader':
        await post('/kill-leader');
        return;
      case 'restart':
        await post('/restart');
        return;
      case 'pause':
      case 'resume':
        await post(`/relay/${step.op}?relay=${encodeURIComponent(this.actor(step).relay ?? '')}`);
        return;
      default:
        throw new Failure(`unknown op ${step.op}`);
    }
  }

  async close(): Promise<void> {
    for (const s of this.seen.values()) s.close();
    for (const a of this.actors.values()) {
      if (a.relay) await post(`/relay/resume?relay=${encodeURIComponent(a.relay)}`).catch(() => {});
    }
    await Promise.all([...this.actors.values()].map((a) => a.client.close().catch(() => {})));
    await this.reader?.close().catch(() => {});
    await Promise.allSettled(this.tasks.values());
  }
}

function throughRelay(hostPort: string): WebSocketConstructor {
  return class extends WebSocket {
    constructor(_url: string) {
      super(`ws://${hostPort}`);
    }
  };
}

async function* mapAsync<T, U>(source: AsyncIterable<T>, f: (t: T) => U): AsyncIterable<U> {
  for await (const t of source) yield f(t);
}

async function runAll(file: string): Promise<number> {
  const { scenarios } = JSON.parse(readFileSync(file, 'utf8')) as { scenarios: Scenario[] };
  const run = `conf/ts/${Math.random().toString(36).slice(2, 10)}/`;
  let failed = 0;
  for (const s of scenarios) {
    const r = new Run(`${run}${s.id}/`);
    const t0 = performance.now();
    let n = 0;
    try {
      for (const step of s.steps) {
        n++;
        await r.step(step);
      }
      console.log(`ok ${s.id} ${Math.round(performance.now() - t0)} ms`);
    } catch (e) {
      failed++;
      console.log(`not ok ${s.id}: step ${n} (${s.steps[n - 1]?.op}): ${(e as Error).message}`);
    } finally {
      await r.close();
    }
  }
  console.log(JSON.stringify({ runner: 'typescript', scenarios: scenarios.length, failed }));
  return failed === 0 ? 0 : 1;
}

/** N acquire + release pairs by one client, one at a time; the first tenth is warm-up. */
async function bench(pairs: number): Promise<number> {
  const client = await LockClient.connect({ endpoints });
  const name = `conf/ts/bench/${Math.random().toString(36).slice(2, 10)}`;
  const ms: number[] = [];
  for (let i = 0; i < pairs; i++) {
    const t0 = performance.now();
    const lock = await client.acquire(name, { waitMs: 5000 });
    await lock.release();
    ms.push(performance.now() - t0);
  }
  await client.close();
  console.log(JSON.stringify({ client: 'typescript', transport: 'websocket', ...percentiles(ms.slice(Math.floor(pairs / 10))) }));
  return 0;
}

/** The pairs' times (ms, in order) and their p50 and p99. */
function percentiles(ms: number[]): { pairs: number; p50Ms: number; p99Ms: number; ms: number[] } {
  const round = (x: number): number => Math.round(x * 100) / 100;
  const sorted = [...ms].sort((a, b) => a - b);
  const at = (q: number): number => round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!);
  return { pairs: ms.length, p50Ms: at(0.5), p99Ms: at(0.99), ms: ms.map(round) };
}

const args = process.argv.slice(2);
const code = args[0] === '--bench' ? await bench(Number(args[1] ?? 300)) : await runAll(args[0] ?? new URL('./scenarios.json', import.meta.url).pathname);
process.exit(code);
