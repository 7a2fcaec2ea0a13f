// `palisade lock`, `get`, `elect` and `leader`: the SDK from the shell.
import { spawn, type ChildProcess } from 'node:child_process';
import { LockClient, LockTimeoutError } from '../client/index.js';
import type { Lock } from '../client/index.js';
import { sdkCredentials } from './credentials.js';
import { exitCodeFor, unavailableText } from './failure.js';

import { EXIT } from './exit-codes.js';
import { Interrupts, interrupted } from './interrupt.js';
import { printable, printableMessage, safeJson } from './terminal-text.js';

export { EXIT };

export interface LockCommandOptions {
  endpoints: string[];
  ttl?: number;
  wait?: number;
  shared?: boolean;
  limit?: number;
  grace: number;
}

function say(msg: string): void {
  process.stderr.write(`palisade: ${printableMessage(msg)}\n`);
}

/** Connects, with Ctrl-C/SIGTERM closing the session from now until `guard` is disposed. */
function connect(guard: Interrupts, endpoints: string[], ttlMs?: number): Promise<LockClient> {
  return guard.session(LockClient.connect({ endpoints, ...sdkCredentials(), failWhenAllRefuse: true, ...(ttlMs !== undefined ? { ttlMs } : {}) }));
}

/** Run `argv` as a child with the lock's name and token in its environment. */
function runChild(argv: string[], env: Record<string, string>): ChildProcess {
  if (argv[0] === '--') argv = argv.slice(1);
  return spawn(argv[0]!, argv.slice(1), { stdio: 'inherit', env: { ...process.env, ...env } });
}

/**
 * Wait for the child to exit. When `lost` aborts first, terminate the child (SIGTERM, then
 * SIGKILL after `graceMs`) and report the loss. Signals we receive are passed on to the
 * child; the command ends when it does (and then releases and closes as usual).
 */
function superviseChild(guard: Interrupts, child: ChildProcess, lost: AbortSignal, graceMs: number): Promise<{ code: number; lost: boolean }> {
  return new Promise((resolve) => {
    let wasLost = false;
    guard.handOver((sig) => child.kill(sig));
    const onLost = () => {
      wasLost = true;
      say(`lease lost (${String((lost.reason as Error | undefined)?.message ?? lost.reason)}); stopping the command`);
      child.kill('SIGTERM');
      setTimeout(() => child.kill('SIGKILL'), graceMs).unref();
    };
    if (lost.aborted) onLost();
    else lost.addEventListener('abort', onLost, { once: true });
    const finish = (code: number) => {
      guard.handOver(null);
      lost.removeEventListener('abort', onLost);
      resolve({ code, lost: wasLost });
    };
    child.on('error', (e) => {
      say(`cannot run ${child.spawnfile}: ${e.message}`);
      finish(127);
    });
    child.on('exit', (code, signal) => finish(code ?? (signal ? 128 + (osSignal(signal) ?? 1) : 1)));
  });
}

function osSignal(sig: NodeJS.Signals): number | undefined {
  const table: Partial<Record<NodeJS.Signals, number>> = { SIGHUP: 1, SIGINT: 2, SIGQUIT: 3, SIGKILL: 9, SIGTERM: 15 };
  return table[sig];
}

export async function lockCommand(name: string, argv: string[], o: LockCommandOptions): Promise<number> {
  if (argv[0] === '--') argv = argv.slice(1);
  if (argv.length === 0) {
    say('nothing to run: palisade lock NAME -- CMD [ARGS...]');
    return 64;
  }
  const guard = Interrupts.install();
  try {
    return await lockWithGuard(guard, name, argv, o);
  } finally {
    guard.dispose();
  }
}

async function lockWithGuard(guard: Interrupts, name: string, argv: string[], o: LockCommandOptions): Promise<number> {
  let client: LockClient;
  try {
    client = await connect(guard, o.endpoints, o.ttl);
  } catch (e) {
    return failed(`cannot reach the cluster`, e, o.endpoints);
  }
  let lock: Lock;
  try {
    lock = await client.acquire(name, {
      ...(o.wait !== undefined ? { waitMs: o.wait } : {}),
      ...(o.shared ? { mode: 'shared' as const } : {}),
      ...(o.limit !== undefined ? { limit: o.limit } : {}),
    });
  } catch (e) {
    await client.close().catch(() => {});
    // Ctrl-C while waiting: the interrupt closed the session (and with it the wait) and exits.
    if (interrupted()) return 1;
    if (e instanceof LockTimeoutError) {
      say(`${name} was not acquired within ${o.wait} ms`);
      return EXIT.WAIT_TIMEOUT;
    }
    say(`cannot acquire ${name}: ${await unavailableText(e, o.endpoints)}`);
    return exitCodeFor(e);
  }
  say(`acquired ${name} with fencing token ${lock.token}`);
  const child = runChild(argv, { PALISADE_LOCK_NAME: name, PALISADE_FENCING_TOKEN: String(lock.token) });
  const r = await superviseChild(guard, child, lock.signal, o.grace);
  await lock.release().catch(() => {});
  await client.close().catch(() => {});
  return r.lost ? EXIT.LEASE_LOST : r.code;
}

/** Connects for a one-shot command, or says why it cannot and gives the exit code. */
async function connectOrCode(guard: Interrupts, endpoints: string[]): Promise<LockClient | number> {
  try {
    return await connect(guard, endpoints);
  } catch (e) {
    guard.dispose();
    return failed(`cannot reach the cluster`, e, endpoints);
  }
}

export async function getCommand(name: string, o: { endpoints: string[]; json?: boolean }): Promise<number> {
  const guard = Interrupts.install();
  const client = await connectOrCode(guard, o.endpoints);
  if (typeof client === 'number') return client;
  try {
    const info = await client.get(name);
    if (o.json) {
      process.stdout.write(`${safeJson(info)}\n`);
      return 0;
    }
    const shown = printable(name);
    if (info.holders.length === 0) process.stdout.write(`${shown}: free${info.delayed ? ' (in lock-delay)' : ''}\n`);
    for (const h of info.holders) process.stdout.write(`${shown}: held by session ${h.session} (${h.mode}) with token ${h.token}\n`);
    info.waiters.forEach((w, i) => process.stdout.write(`  waiter ${i + 1}: session ${w.session} (${w.mode})\n`));
    return 0;
  } catch (e) {
    return failed(`cannot read ${name}`, e, o.endpoints);
  } finally {
    await client.close().catch(() => {});
    guard.dispose();
  }
}

export async function electCommand(name: string, value: string, argv: string[], o: { endpoints: string[]; ttl?: number; grace: number }): Promise<number> {
  const guard = Interrupts.install();
  let client: LockClient;
  try {
    client = await connect(guard, o.endpoints, o.ttl);
  } catch (e) {
    guard.dispose();
    return failed(`cannot reach the cluster`, e, o.endpoints);
  }
  try {
    say(`campaigning in ${name} as ${JSON.stringify(value)}`);
    // Ctrl-C while campaigning or leading: the interrupt closes the session, which withdraws
    // the candidacy or resigns, and exits 130/143.
    const leadership = await client.election(name).campaign(value);
    process.stdout.write(`${leadership.token}\n`);
    say(`leading ${name} with token ${leadership.token}`);
    let code = EXIT.LEASE_LOST as number;
    if (argv[0] === '--') argv = argv.slice(1);
    if (argv.length > 0) {
      const child = runChild(argv, { PALISADE_ELECTION: name, PALISADE_FENCING_TOKEN: String(leadership.token) });
      const r = await superviseChild(guard, child, leadership.signal, o.grace);
      code = r.lost ? EXIT.LEASE_LOST : r.code;
    } else {
      await new Promise<void>((resolve) => {
        if (leadership.signal.aborted) return resolve();
        leadership.signal.addEventListener('abort', () => resolve(), { once: true });
      });
    }
    await leadership.resign().catch(() => {});
    return code;
  } catch (e) {
    return failed(`election failed`, e, o.endpoints);
  } finally {
    await client.close().catch(() => {});
    guard.dispose();
  }
}

export async function leaderCommand(name: string, o: { endpoints: string[]; watch?: boolean; json?: boolean }): Promise<number> {
  const guard = Interrupts.install();
  const client = await connectOrCode(guard, o.endpoints);
  if (typeof client === 'number') return client;
  const print = (s: { leader: number | null; value: string | null; token: number | null }) =>
    process.stdout.write(
      o.json
        ? `${safeJson({ election: name, ...s }, 0)}\n`
        : s.leader === null
          ? `${printable(name)}: no leader\n`
          : `${printable(name)}: session ${s.leader} leads with token ${s.token}, value ${printable(JSON.stringify(s.value))}\n`,
    );
  try {
    if (!o.watch) {
      print(await client.election(name).leader());
      return 0;
    }
    const obs = client.election(name).observe();
    // --watch runs until Ctrl-C: the signal ends the watch, and the command ends with 0.
    guard.handOver(() => obs.close());
    for await (const s of obs) print(s);
    return 0;
  } catch (e) {
    return failed(`cannot read ${name}`, e, o.endpoints);
  } finally {
    guard.handOver(null);
    await client.close().catch(() => {});
    guard.dispose();
  }
}

/** The command failed with `e`: say why in words and exit with its code (1 when Ctrl-C or
 *  SIGTERM ended it: the interrupt has already said so). */
async function failed(what: string, e: unknown, endpoints: readonly string[]): Promise<number> {
  if (interrupted()) return 1;
  say(`${what}: ${await unavailableText(e, endpoints)}`);
  return exitCodeFor(e);
}
