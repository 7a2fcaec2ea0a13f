// The paused-holder story, shared by `npm run demo` and its integration tests:
//   A takes a lock with a short TTL and is paused (SIGSTOP) past it; B takes the lock with a
//   larger token and writes to a fenced resource; A resumes, still believing it holds the
//   lock, and writes with its old token. The resource rejects A's write, and A's lock.signal
//   is already aborted by the time A can act.
// The resource is pluggable (resource.ts): by default a FencedRegister behind HTTP; the
// PostgreSQL one (postgres-resource.ts) writes a row inside PostgresFence.write.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { LockClient } from '../../src/client/index.js';
import { httpResource, type FencedResource, type WriteOutcome } from './resource.js';

export { startResource, httpResource, type FencedResource, type WriteOutcome } from './resource.js';

export interface StoryOutcome {
  tokenA: number;
  tokenB: number;
  bWrite: { status: number };
  aResumed: { signalAborted: boolean; reason: string };
  aWrite: WriteOutcome;
  finalValue: string;
  finalFence: string;
}

export interface StoryOptions {
  /** A's session TTL. Default 2000 ms. */
  ttlMs?: number;
  lock?: string;
  log?: (line: string) => void;
  /** The fenced resource; default a fresh HTTP one (closed at the end). A given one is the caller's to close. */
  resource?: FencedResource;
}

export async function runStory(endpoints: string[], opts: StoryOptions = {}): Promise<StoryOutcome> {
  const ttlMs = opts.ttlMs ?? 2000;
  const name = opts.lock ?? `paused-holder/${process.pid}/${Date.now()}`;
  const log = opts.log ?? (() => {});
  const resource = opts.resource ?? (await httpResource());
  const holderPath = fileURLToPath(new URL('./holder.ts', import.meta.url));
  const a = spawn(process.execPath, ['--import', 'tsx', holderPath, endpoints.join(','), name, String(ttlMs), resource.spec], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: a.stdout! })[Symbol.asyncIterator]();
  const next = async (): Promise<Record<string, unknown>> => {
    const r = await lines.next();
    if (r.done) throw new Error('client A exited early');
    return JSON.parse(r.value) as Record<string, unknown>;
  };
  let b: LockClient | null = null;
  try {
    const acquired = await next();
    const tokenA = acquired['token'] as number;
    log(`A holds "${name}" with fencing token ${tokenA} (session TTL ${ttlMs} ms).`);
    a.kill('SIGSTOP');
    log(`A is paused (SIGSTOP) — think of a long GC pause. A still believes it holds the lock.`);

    b = await LockClient.connect({ endpoints });
    const t0 = performance.now();
    const lockB = await b.acquire(name);
    log(`B waited ${((performance.now() - t0) / 1000).toFixed(1)} s: A's lease expired, and B now holds the lock with token ${lockB.token}.`);
    const bWrite = await resource.write(lockB.token, 'written by B');
    log(`B writes ${resource.label} with token ${lockB.token}: ${bWrite.status === 200 ? 'accepted' : `rejected (${bWrite.status} ${bWrite.body.error ?? ''})`}.`);

    a.kill('SIGCONT');
    a.stdin!.write('write\n');
    const resumed = await next();
    log(`A resumes. Its lock.signal is ${resumed['signalAborted'] ? 'aborted' : 'NOT aborted'}${resumed['reason'] ? ` (${String(resumed['reason'])})` : ''}.`);
    const wrote = await next();
    const body = wrote['body'] as WriteOutcome['body'];
    log(
      body.accepted
        ? `A writes with its old token ${tokenA}: ACCEPTED — the resource did not enforce the token!`
        : `A writes anyway with its old token ${tokenA}: rejected by the resource${body.errorName ? ` with ${body.errorName}` : ''} (it has seen token ${body.fence}).`,
    );
    const final = await resource.read();
    log(`${capitalise(resource.label)} holds "${final.value}", written with token ${final.fence}.`);
    await lockB.release();
    return {
      tokenA,
      tokenB: lockB.token,
      bWrite: { status: bWrite.status },
      aResumed: { signalAborted: resumed['signalAborted'] as boolean, reason: resumed['reason'] as string },
      aWrite: { status: wrote['status'] as number, body },
      finalValue: final.value,
      finalFence: final.fence,
    };
  } finally {
    if (a.exitCode === null) {
      a.kill('SIGCONT');
      a.kill('SIGKILL');
    }
    await b?.close().catch(() => {});
    if (!opts.resource) await resource.close();
  }
}

function capitalise(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}
