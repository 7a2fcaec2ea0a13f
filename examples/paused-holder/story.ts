// The paused-holder story, shared by `npm run demo` and its integration test:
//   A takes a lock with a short TTL and is paused (SIGSTOP) past it; B takes the lock with a
//   larger token and writes to a fenced resource; A resumes, still believing it holds the
//   lock, and writes with its old token. The resource rejects A's write, and A's lock.signal
//   is already aborted by the time A can act.
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { FencedRegister, StaleTokenError } from '../../src/fence/index.js';
import { LockClient } from '../../src/client/index.js';

export interface StoryOutcome {
  tokenA: number;
  tokenB: number;
  bWrite: { status: number };
  aResumed: { signalAborted: boolean; reason: string };
  aWrite: { status: number; body: { accepted: boolean; fence?: string; error?: string } };
  finalValue: string;
  finalFence: string;
}

/** A fenced register behind HTTP: POST {token, value}; 200 accepted, 409 stale token. */
export function startResource(): Promise<{ server: Server; url: string; register: FencedRegister<string> }> {
  const register = new FencedRegister<string>('(empty)', 'report');
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', async () => {
      try {
        const { token, value } = JSON.parse(body) as { token: number; value: string };
        await register.write(token, value);
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ accepted: true }));
      } catch (e) {
        const stale = e instanceof StaleTokenError;
        res.writeHead(stale ? 409 : 400, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ accepted: false, error: (e as Error).message, ...(stale ? { fence: String(e.fence) } : {}) }));
      }
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      const a = server.address();
      const port = typeof a === 'object' && a ? a.port : 0;
      resolve({ server, url: `http://127.0.0.1:${port}/report`, register });
    }),
  );
}

export async function runStory(endpoints: string[], opts: { ttlMs?: number; lock?: string; log?: (line: string) => void } = {}): Promise<StoryOutcome> {
  const ttlMs = opts.ttlMs ?? 2000;
  const name = opts.lock ?? `paused-holder/${process.pid}/${Date.now()}`;
  const log = opts.log ?? (() => {});
  const { server, url, register } = await startResource();
  const holderPath = fileURLToPath(new URL('./holder.ts', import.meta.url));
  const a = spawn(process.execPath, ['--import', 'tsx', holderPath, endpoints.join(','), name, String(ttlMs), url], {
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
    const bRes = await fetch(url, { method: 'POST', body: JSON.stringify({ token: lockB.token, value: 'written by B' }) });
    log(`B writes the report with token ${lockB.token}: ${bRes.status === 200 ? 'accepted' : `rejected (${bRes.status})`}.`);

    a.kill('SIGCONT');
    a.stdin!.write('write\n');
    const resumed = await next();
    log(`A resumes. Its lock.signal is ${resumed['signalAborted'] ? 'aborted' : 'NOT aborted'}${resumed['reason'] ? ` (${String(resumed['reason'])})` : ''}.`);
    const wrote = await next();
    const body = wrote['body'] as StoryOutcome['aWrite']['body'];
    log(
      body.accepted
        ? `A writes with its old token ${tokenA}: ACCEPTED — the resource did not enforce the token!`
        : `A writes anyway with its old token ${tokenA}: rejected by the resource (it has seen token ${body.fence}).`,
    );
    log(`The report holds "${register.value}", written with token ${register.fence}.`);
    await lockB.release();
    return {
      tokenA,
      tokenB: lockB.token,
      bWrite: { status: bRes.status },
      aResumed: { signalAborted: resumed['signalAborted'] as boolean, reason: resumed['reason'] as string },
      aWrite: { status: wrote['status'] as number, body },
      finalValue: register.value,
      finalFence: String(register.fence),
    };
  } finally {
    if (a.exitCode === null) {
      a.kill('SIGCONT');
      a.kill('SIGKILL');
    }
    await b?.close().catch(() => {});
    server.close();
  }
}
