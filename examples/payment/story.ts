// The payment story, with real processes: why `lock.once` plus an API that honours
// idempotency keys charges a customer exactly once even when the lock holder is paused
// mid-way.
//
//   1. The payment API runs as its own process (payment-api.ts).
//   2. Worker A (worker.ts, its own process) takes the lock and runs
//      lock.once('charge-42', (idempotencyKey, signal) => POST /charges with that key).
//      The API charges; A is paused (SIGSTOP) right after, before it records the result.
//   3. A's lease expires; B takes the lock. lock.once finds the attempt begun and never
//      completed: with the default policy it throws InDoubtError (the charge may or may not
//      have happened); with { inDoubt: 'retry-same-key' } it runs again with A's key, the
//      API recognises the key and returns A's charge, and B records the result.
//   4. A resumes and tries to record its result: the cluster refuses its token, and A gets
//      LockLostError.
//   5. Anyone who later holds the lock and asks for 'charge-42' gets B's recorded receipt,
//      without running anything. The API has exactly one charge.
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { InDoubtError, LockClient } from '../../src/client/index.js';
import { chargeOnce, type Receipt } from './charge.js';
import type { ChargesView } from './payment-api.js';

export interface PaymentOutcome {
  apiUrl: string;
  tokenA: number;
  tokenB: number;
  /** What A's fn got from the API before A was paused. */
  aCharged: Receipt;
  /** B's first try, with the default policy: the InDoubtError it threw (null if none). */
  bDefault: { name: string; code: string; idempotencyKey: string; attempt: number; token: number } | null;
  /** B's retry with the same key: the receipt B recorded. */
  bReceipt: Receipt;
  /** How A's once ended after it resumed. */
  aEnd: { event: string; name?: string; code?: string | null; message?: string; signalAborted?: boolean; receipt?: Receipt };
  /** A later holder's once('charge-42'): what it returned, and whether its fn ran. */
  later: { receipt: Receipt; fnRan: boolean };
  charges: ChargesView;
}

export interface PaymentStoryOptions {
  /** A's session TTL. Default 2000 ms. */
  ttlMs?: number;
  lock?: string;
  opKey?: string;
  amount?: number;
  log?: (line: string) => void;
}

const here = (file: string): string => fileURLToPath(new URL(file, import.meta.url));

/** A child process that speaks JSON lines on stdout. */
function child(args: string[]): { proc: ChildProcess; next: () => Promise<Record<string, unknown>> } {
  const proc = spawn(process.execPath, ['--import', 'tsx', ...args], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: proc.stdout! })[Symbol.asyncIterator]();
  const next = async (): Promise<Record<string, unknown>> => {
    const r = await lines.next();
    if (r.done) throw new Error(`${args[0]} exited early`);
    return JSON.parse(r.value) as Record<string, unknown>;
  };
  return { proc, next };
}

async function expectEvent(next: () => Promise<Record<string, unknown>>, event: string): Promise<Record<string, unknown>> {
  const line = await next();
  if (line['event'] !== event) throw new Error(`expected "${event}", got ${JSON.stringify(line)}`);
  return line;
}

export async function runPaymentStory(endpoints: string[], opts: PaymentStoryOptions = {}): Promise<PaymentOutcome> {
  const ttlMs = opts.ttlMs ?? 2000;
  const name = opts.lock ?? `payment/order-42/${process.pid}/${Date.now()}`;
  const opKey = opts.opKey ?? 'charge-42';
  const amount = opts.amount ?? 4200;
  const log = opts.log ?? (() => {});

  const api = child([here('./payment-api.ts')]);
  const clients: LockClient[] = [];
  let a: ReturnType<typeof child> | null = null;
  try {
    const apiUrl = (await expectEvent(api.next, 'listening'))['url'] as string;
    log(`The payment API listens on ${apiUrl} (a separate process; it de-duplicates by Idempotency-Key).`);

    a = child([here('./worker.ts'), '--endpoints', endpoints.join(','), '--lock', name, '--ttl', String(ttlMs), '--api', apiUrl, '--op', opKey, '--amount', String(amount), '--who', 'A']);
    const tokenA = (await expectEvent(a.next, 'acquired'))['token'] as number;
    log(`A holds "${name}" with token ${tokenA} and runs lock.once('${opKey}', ...).`);
    const aCharged = (await expectEvent(a.next, 'charged')) as unknown as Receipt;
    a.proc.kill('SIGSTOP');
    log(`The API charged ${aCharged.chargeId} for key ${aCharged.idempotencyKey}; A is paused (SIGSTOP) before it records that.`);

    const b = await LockClient.connect({ endpoints });
    clients.push(b);
    const t0 = performance.now();
    const lockB = await b.acquire(name);
    log(`B waited ${((performance.now() - t0) / 1000).toFixed(1)} s: A's lease expired; B holds the lock with token ${lockB.token}.`);

    let bDefault: PaymentOutcome['bDefault'] = null;
    try {
      await chargeOnce(lockB, opKey, apiUrl, amount, { who: 'B' });
      log(`B's once with the default policy ran without finding A's attempt — unexpected.`);
    } catch (e) {
      if (!(e instanceof InDoubtError)) throw e;
      bDefault = { name: e.name, code: e.code, idempotencyKey: e.idempotencyKey, attempt: e.attempt, token: e.token };
      log(`B's once, default policy: ${e.name} — attempt ${e.attempt} by token ${e.token} with key ${e.idempotencyKey} may or may not have happened.`);
    }
    const bReceipt = await chargeOnce(lockB, opKey, apiUrl, amount, { who: 'B', inDoubt: 'retry-same-key' });
    log(
      `B's once with { inDoubt: 'retry-same-key' } calls the API with key ${bReceipt.idempotencyKey}: ` +
        `${bReceipt.replayed ? `the API recognises it and returns ${bReceipt.chargeId}` : `NEW charge ${bReceipt.chargeId}`}; B records that.`,
    );

    a.proc.kill('SIGCONT');
    a.proc.stdin!.write('go on\n');
    const aEnd = (await a.next()) as PaymentOutcome['aEnd'];
    log(
      aEnd.event === 'error'
        ? `A resumes and tries to record its result: ${aEnd.name} (${aEnd.message}).`
        : `A resumes and records its result — the cluster did not fence it!`,
    );
    await lockB.release();

    const c = await LockClient.connect({ endpoints });
    clients.push(c);
    const lockC = await c.acquire(name);
    let fnRan = false;
    const later = await lockC.once<Receipt>(opKey, () => {
      fnRan = true;
      return Promise.reject(new Error('must not run: the operation is recorded'));
    });
    await lockC.release();
    log(`Later, C takes the lock and asks for '${opKey}': ${fnRan ? 'it ran AGAIN' : `the recorded receipt (${later.chargeId}, recorded by ${later.recordedBy})`}.`);

    const charges = (await (await fetch(`${apiUrl}/charges`)).json()) as ChargesView;
    log(`The API received ${charges.requests} charge requests and holds ${charges.charges.length} charge(s).`);
    return { apiUrl, tokenA, tokenB: lockB.token, aCharged, bDefault, bReceipt, aEnd, later: { receipt: later, fnRan }, charges };
  } finally {
    if (a && a.proc.exitCode === null) {
      a.proc.kill('SIGCONT');
      a.proc.kill('SIGKILL');
    }
    await Promise.all(clients.map((cl) => cl.close().catch(() => {})));
    if (api.proc.exitCode === null) api.proc.kill('SIGTERM');
  }
}
