// What the rotation tests share: the commands of docs/operations.md's procedures, run as the
// page writes them (its shell blocks marked `<!-- rotation step: NAME -->`), with only the
// config's and the certificates' paths changed to the test cluster's; `systemctl reload`
// run as systemd runs it, the ExecReload line of deploy/palisade@.service with $MAINPID the
// node's pid; and a client that holds a lock throughout, writing under its fence all along.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { LockClient, type Lock, type LockClientOptions } from '../../src/client/index.js';
import { CLI, ROOT, TestCluster, sleep, until } from './cluster.js';
import { within } from './within.js';
import { agreedLeader } from './node-process.js';

const run = promisify(execFile);

/** The shell block a page marks `<!-- rotation step: NAME -->`, unindented. */
export function markedStep(page: string, name: string, marker = 'rotation step'): string {
  const text = readFileSync(join(ROOT, page), 'utf8');
  const m = new RegExp(`^([ \\t]*)<!-- ${marker}: ${name} -->\\n[ \\t]*\`\`\`sh\\n([\\s\\S]*?)\\n[ \\t]*\`\`\`$`, 'm').exec(text);
  assert.ok(m, `${page} marks a step "${name}"`);
  const indent = m[1]!;
  return m[2]!.split('\n').map((l) => (l.startsWith(indent) ? l.slice(indent.length) : l)).join('\n');
}

/** The unit's ExecReload command, as systemd would run it (before $MAINPID is expanded). */
export function unitExecReload(): string {
  const m = /^ExecReload=(.+)$/m.exec(readFileSync(join(ROOT, 'deploy/palisade@.service'), 'utf8'));
  assert.ok(m, 'deploy/palisade@.service has ExecReload');
  return m[1]!;
}

/**
 * Runs docs/operations.md's steps against a test cluster: `/etc/palisade/cluster.config.json`
 * and `/etc/palisade/certs` are the cluster's, the hosts' addresses (10.0.0.N) 127.0.0.1, and
 * on the PATH are `palisade` (this build's CLI) and a `systemctl` that does what systemd's
 * `reload` does: runs the unit's ExecReload with MAINPID set to the node's pid.
 */
export class DocSteps {
  readonly work: string;
  private readonly bin: string;
  private readonly pids: string;

  constructor(
    private readonly cluster: TestCluster,
    private readonly env: Record<string, string> = {},
  ) {
    this.work = mkdtempSync(join(tmpdir(), 'palisade-rotation-'));
    this.bin = join(this.work, 'bin');
    this.pids = join(this.work, 'pids');
    mkdirSync(this.bin);
    mkdirSync(this.pids);
    const tool = (name: string, body: string): void => {
      writeFileSync(join(this.bin, name), `#!/bin/bash\n${body}\n`);
      chmodSync(join(this.bin, name), 0o755);
    };
    tool('palisade', `exec ${JSON.stringify(process.execPath)} ${JSON.stringify(CLI)} "$@"`);
    tool(
      'systemctl',
      [
        'set -euo pipefail',
        '[ "$1" = reload ] || { echo "this systemctl only reloads" >&2; exit 1; }',
        'unit="${2%.service}"; id="${unit#palisade@}"',
        `MAINPID="$(cat ${JSON.stringify(this.pids)}/"$id")"`,
        unitExecReload().replaceAll('$MAINPID', '"$MAINPID"'),
      ].join('\n'),
    );
  }

  /** The paths and addresses of the page, made the test cluster's. */
  here(script: string): string {
    return script
      .replaceAll('/etc/palisade/cluster.config.json', this.cluster.configPath)
      .replaceAll('/etc/palisade/certs', join(dirname(this.cluster.configPath), 'certs'))
      .replaceAll('10.0.0.$i', '127.0.0.1');
  }

  /** Runs a step of `page` with bash (-euo pipefail) in the work directory; its stdout. Not
   *  synchronously: the holder in this process keeps its session alive meanwhile. */
  async run(name: string, opts: { page?: string; marker?: string; node?: string } = {}): Promise<string> {
    let script = this.here(markedStep(opts.page ?? 'docs/operations.md', name, opts.marker));
    if (opts.node) script = script.replaceAll('palisade@n1', `palisade@${opts.node}`);
    for (const n of this.cluster.nodes) if (this.cluster.procs.has(n.id)) writeFileSync(join(this.pids, n.id), String(this.cluster.pid(n.id)));
    try {
      const { stdout } = await run('bash', ['-euo', 'pipefail', '-c', script], {
        cwd: this.work,
        env: { ...process.env, ...this.env, PATH: `${this.bin}:${dirname(process.execPath)}:${process.env.PATH ?? ''}` },
        encoding: 'utf8',
        timeout: 60_000,
      });
      return stdout;
    } catch (e) {
      const x = e as { stdout?: string; stderr?: string; message: string };
      throw new Error(`step ${name}${opts.node ? ` (${opts.node})` : ''} failed: ${x.message}\n${x.stdout ?? ''}\n${x.stderr ?? ''}`);
    }
  }

  /**
   * The page's reload step on each node in turn, as an operator goes host by host: each
   * reload must be logged as done (not refused) and the cluster healthy again (one leader,
   * no warning on any node: a refused peer link would be one) before the next.
   */
  /** Reloads each node in turn; with `holder`, waits after each for a fenced write that
   *  began after the reload to succeed (the cluster serves the holder at every step). */
  async reloadEach(holder?: Holder): Promise<void> {
    for (const n of this.cluster.nodes) {
      const before = reloadsLogged(this.cluster, n.id);
      const out = await this.run('reload', { node: n.id });
      await until(() => {
        const log = this.cluster.logOf(n.id);
        assert.doesNotMatch(log, /config reload refused/, `${n.id} refused the reload:\n${log.slice(-2000)}`);
        return reloadsLogged(this.cluster, n.id) > before;
      }, 10_000, `${n.id} to log its reload`);
      assert.match(out, /n1 .*\n.*n2 .*\n.*n3 /, 'palisade status printed the nodes');
      await healthy(this.cluster);
      await holder?.nextWrite(`after ${n.id}'s reload`);
    }
  }

  remove(): void {
    rmSync(this.work, { recursive: true, force: true });
  }
}

export function reloadsLogged(c: TestCluster, id: string): number {
  return (c.logOf(id).match(/"msg":"config reloaded/g) ?? []).length;
}

/** Peer links each node has authenticated since it started (its status's transport counters). */
export async function linksMade(c: TestCluster): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const s of await c.statuses()) if (s) out[s.id] = (s as unknown as { transport: { connects: number } }).transport.connects;
  return out;
}

/** Every node up, one leader they agree on, and not one warning anywhere. */
export async function healthy(c: TestCluster, ms = 10_000): Promise<void> {
  let last = '';
  try {
    await until(async () => {
      const ss = await c.statuses();
      last = JSON.stringify(ss.map((s) => s && { id: s.id, role: s.role, leader: s.leader, warnings: s.warnings }));
      return ss.every((s) => s !== null && (s.warnings ?? []).length === 0) && agreedLeader(ss) !== null;
    }, ms, 'the cluster to be healthy again');
  } catch (e) {
    throw new Error(`${(e as Error).message}; last statuses: ${last}`);
  }
}

/**
 * A client that holds a lock from before a rotation to after it, and writes a key under the
 * lock's fence every 200 ms meanwhile: every write must succeed (the cluster serves
 * throughout, the lock is never lost), and `lock.signal` must never abort.
 */
export class Holder {
  private writes = 0;
  /** Waiting for a write that begins after they asked (nextWrite). */
  private waiting: (() => void)[] = [];
  /** The longest a fenced write took (reported, never asserted: tests do not time things). */
  private slowestMs = 0;
  private readonly failures: string[] = [];
  private stopped = false;
  private loop: Promise<void> = Promise.resolve();
  private aborted: string | null = null;

  private constructor(
    readonly client: LockClient,
    readonly lock: Lock,
    private readonly key: string,
  ) {
    lock.signal.addEventListener('abort', () => {
      this.aborted = String(lock.signal.reason);
    });
  }

  static async start(options: LockClientOptions, name: string, key: string): Promise<Holder> {
    const client = await LockClient.connect({ ttlMs: 3_000, ...options });
    const lock = await client.acquire(name);
    const h = new Holder(client, lock, key);
    h.loop = h.writeAlong();
    return h;
  }

  private async writeAlong(): Promise<void> {
    let waiting: (() => void)[] = [];
    while (!this.stopped) {
      try {
        const began = performance.now();
        waiting = this.waiting.splice(0);
        await this.client.put(this.key, `write ${this.writes}`, { fence: this.lock });
        this.slowestMs = Math.max(this.slowestMs, performance.now() - began);
        this.writes += 1;
        for (const w of waiting) w();
      } catch (e) {
        this.waiting.unshift(...waiting); // they wait for a write that succeeds
        this.failures.push(`${(e as Error).name}: ${(e as Error).message}`);
      }
      await sleep(200);
    }
  }

  /** Resolves once a fenced write that began after this call has succeeded. */
  nextWrite(what: string): Promise<void> {
    return within(new Promise<void>((resolve) => this.waiting.push(resolve)), 20_000, () => `no fenced write succeeded ${what}: ${JSON.stringify(this.failures)}`);
  }

  /** Stops writing; then the lock is still held, its token current, and a last fenced write
   *  succeeds. Returns the writes made and the slowest. */
  async check(): Promise<{ writes: number; slowestMs: number }> {
    this.stopped = true;
    await this.loop;
    assert.equal(this.aborted, null, `the holder's lock.signal was aborted: ${this.aborted}`);
    assert.deepEqual(this.failures, [], 'every fenced write along the rotation succeeded');
    const info = await this.client.get(this.lock.name);
    assert.deepEqual(info?.holders.map((h) => h.token), [this.lock.token], 'the holder still holds the lock, with its token');
    await this.client.put(this.key, 'after the rotation', { fence: this.lock });
    return { writes: this.writes, slowestMs: Math.round(this.slowestMs) };
  }

  async close(): Promise<void> {
    this.stopped = true;
    await this.loop.catch(() => {});
    await this.client.close();
  }
}
