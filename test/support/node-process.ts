// What every harness that runs real `palisade serve` processes needs, written once: free
// ports, starting a node with its log in a file, waiting until its client port answers,
// stopping it, and reading an agreed leader off the nodes' statuses. The integration
// harness (test/support/cluster.ts), the chaos cluster (test/chaos/cluster.ts)
// and the bench cluster (bench/cluster.ts) differ only in the configs they write.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { rpc, type RpcCredentials } from '../../src/protocol/rpc.js';
import type { NodeStatus } from '../../src/protocol/client-protocol.js';
import { claimPort, releasePort } from './port-claims.js';
import './exit-on-sigterm.js';

export const ROOT = resolve(import.meta.dirname, '../..');
/** The built entry point of the checkout at `root` (its `npm run build`): the nodes run what a user runs. */
export function cliOf(root: string): string {
  return join(root, 'dist/cli/main.js');
}
/** This checkout's built entry point. */
export const CLI = cliOf(ROOT);

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/**
 * `count` distinct ports, free a moment ago. They are drawn below the kernel's ephemeral
 * range (usually from 32768), so that neither the source port of an outgoing connection nor
 * another suite's listen(0) takes one between our check and the node's listen; and each is
 * claimed for the life of this process (./port-claims.ts), so that no other test or bench
 * process, nor a later call here, hands it out while our node starts, or while it is down
 * between a kill and a restart.
 */
export async function freePorts(count: number, range: PortRange = DEFAULT_PORT_RANGE): Promise<number[]> {
  const ports: number[] = [];
  const span = range.high - range.low;
  for (let tries = 0; ports.length < count; tries++) {
    if (tries >= span * 20) throw new Error(`no ${count} free ports in ${range.low}-${range.high} (${ports.length} found)`);
    const port = range.low + Math.floor(Math.random() * span);
    if (!(await claimPort(port))) continue; // ours already, or another process's
    if (await canListen(port)) ports.push(port);
    else releasePort(port); // taken by something that is not a test
  }
  return ports;
}

async function canListen(port: number): Promise<boolean> {
  const s = createServer();
  const ok = await new Promise<boolean>((res) => {
    s.once('error', () => res(false));
    s.listen(port, '127.0.0.1', () => res(true));
  });
  if (ok) await new Promise<void>((res) => s.close(() => res()));
  return ok;
}

/** Ports from `low` (inclusive) to `high` (exclusive). */
export interface PortRange {
  readonly low: number;
  readonly high: number;
}
const DEFAULT_PORT_RANGE: PortRange = { low: 20_000, high: 32_000 };

export async function freePort(): Promise<number> {
  return (await freePorts(1))[0]!;
}

/** Every node process started through here that still runs: none outlives the test process
 *  (on SIGTERM too: ./exit-on-sigterm.ts). */
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const p of running) p.kill('SIGKILL');
});

export interface NodeLaunch {
  readonly id: string;
  readonly configPath: string;
  /** The node's stdout and stderr are appended here. */
  readonly logPath: string;
  readonly clientUrl: string;
  readonly args?: readonly string[];
  readonly cli?: string;
  readonly credentials?: RpcCredentials;
  readonly startTimeoutMs?: number;
}

/** Starts `palisade serve` for one node; resolves once its client port answers `status`. */
export async function startNode(l: NodeLaunch): Promise<ChildProcess> {
  const log = openSync(l.logPath, 'a');
  // PALISADE_NODE_FLAGS: V8/Node flags for the node processes only (a profile, --trace-gc),
  // which NODE_OPTIONS would also give the test or bench process itself, or refuse.
  const nodeFlags = (process.env.PALISADE_NODE_FLAGS ?? '').split(' ').filter((f) => f !== '');
  const p = spawn(process.execPath, [...nodeFlags, l.cli ?? CLI, 'serve', '--config', l.configPath, '--id', l.id, '--log-level', 'info', ...(l.args ?? [])], {
    stdio: ['ignore', log, log],
  });
  closeSync(log);
  running.add(p);
  p.once('exit', () => running.delete(p));
  const timeoutMs = l.startTimeoutMs ?? 20_000;
  const deadline = Date.now() + timeoutMs;
  let lastError = '';
  for (;;) {
    if (p.exitCode !== null || p.signalCode !== null) {
      throw new Error(`node ${l.id} exited at start-up (${p.signalCode ?? `code ${p.exitCode}`}):\n${logTail(l.logPath)}`);
    }
    try {
      await rpc(l.clientUrl, { op: 'status' }, 1_000, l.credentials ?? {});
      return p;
    } catch (e) {
      lastError = e instanceof Error ? e.message : String(e);
    }
    if (Date.now() > deadline) {
      // The caller never gets this process, so nothing else could stop it, and a child
      // process left running holds the test file open until its file timeout.
      await signalNode(p, 'SIGKILL');
      throw new Error(`node ${l.id} (pid ${p.pid}, killed) did not answer status within ${timeoutMs} ms: ${lastError}\n${logTail(l.logPath)}`);
    }
    await sleep(50);
  }
}

/**
 * Like Promise.all for starting nodes, but rejects only once every start has settled: the
 * harness records a node when its start resolves, so a start still running when another
 * failed would record its node after the caller's cleanup had run, and leave it running
 * (a test file then never ends).
 */
export async function settleAll<T>(starts: readonly Promise<T>[]): Promise<T[]> {
  const results = await Promise.allSettled(starts);
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
  return results.map((r) => (r as PromiseFulfilledResult<T>).value);
}

/** Sends `sig`; resolves once the process has exited (SIGKILL and SIGTERM) or at once. */
export async function signalNode(p: ChildProcess, sig: NodeJS.Signals): Promise<void> {
  const gone = p.exitCode !== null || p.signalCode !== null;
  if (sig !== 'SIGKILL' && sig !== 'SIGTERM') {
    if (!gone) p.kill(sig);
    return;
  }
  if (gone) return;
  const exited = new Promise<void>((r) => p.once('exit', () => r()));
  p.kill(sig);
  await exited;
}

export function logTail(path: string, chars = 2_000): string {
  try {
    return readFileSync(path, 'utf8').slice(-chars);
  } catch {
    return '';
  }
}

/** The one leader every answering node names in the same term, or null. */
export function agreedLeader(statuses: readonly (Pick<NodeStatus, 'role' | 'leader' | 'term' | 'id'> | null)[]): string | null {
  const ss = statuses.filter((s) => s !== null);
  const leaders = ss.filter((s) => s.role === 'leader');
  if (leaders.length !== 1) return null;
  const l = leaders[0]!;
  return ss.every((s) => s.leader === l.id && s.term === l.term) ? l.id : null;
}

/** Poll `fn` until it returns a truthy value (a condition on another process, which sends no event). */
export async function until<T>(fn: () => Promise<T> | T, timeoutMs: number, what: string): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}
