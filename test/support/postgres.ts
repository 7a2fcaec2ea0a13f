// A throwaway PostgreSQL server for tests and benchmarks: a fresh cluster in a temp dir,
// on a free port of 127.0.0.1 with its unix socket in that dir, removed afterwards. Tests
// run against a real server; there is no mock of the database anywhere.
//
//   const server = await startPostgres();
//   after(() => server.destroy());
//   const pool = new pg.Pool(server.poolConfig());
//
// or, in a node:test file or suite, `const db = usePostgres({ setup, teardown })`.
//
// Run directly (`node --import tsx test/support/postgres.ts`, or scripts/postgres.sh serve)
// it starts one, prints its connection string and keeps it until Ctrl-C.
import { freePort } from './node-process.js';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync } from 'node:fs';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { after, before, beforeEach } from 'node:test';
import pg from 'pg';

export interface PostgresServerOptions {
  /**
   * Keep fsync and synchronous commit on, as a production server would (benchmarks).
   * Off by default: tests want speed, and a crash of a test server loses nothing of value.
   */
  durable?: boolean;
  /** Extra server settings, passed as `-c name=value`. */
  settings?: Record<string, string | number | boolean>;
}

export interface PostgresServer {
  readonly host: string;
  readonly port: number;
  /** The directory that holds the data directory, the unix socket and nothing else. */
  readonly baseDir: string;
  readonly dataDir: string;
  readonly socketDir: string;
  readonly user: string;
  readonly database: string;
  readonly connectionString: string;
  /** Connection settings for pg.Pool or pg.Client (TCP on 127.0.0.1). */
  poolConfig(extra?: pg.PoolConfig): pg.PoolConfig;
  /** Stops the server process (fast shutdown: open transactions abort), keeping its data. */
  stop(): Promise<void>;
  /** Starts the stopped server again on the same port and data. */
  start(): Promise<void>;
  /** Stops the server and deletes its directory. Safe to call more than once. */
  destroy(): Promise<void>;
  /** The last lines the server logged, for failure messages. */
  log(): string;
}

const SUPERUSER = 'palisade';
const START_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 10_000;
const LOG_LIMIT = 16_384;

const INSTALL_HINT =
  'The PostgreSQL tests run against a real server and need its binaries (initdb, postgres). ' +
  'Install them with `apt-get update && apt-get install -y postgresql` ' +
  '(.ci/run does this before `npm test`), or point PG_BIN at a directory that holds them.';

/** The directory with initdb and postgres: $PG_BIN, else the newest /usr/lib/postgresql/<v>/bin, else PATH. */
export function findPostgresBin(): string {
  const has = (dir: string): boolean => existsSync(join(dir, 'initdb')) && existsSync(join(dir, 'postgres'));
  const fromEnv = process.env['PG_BIN'];
  if (fromEnv) {
    if (has(fromEnv)) return fromEnv;
    throw new Error(`PG_BIN=${fromEnv} does not contain initdb and postgres. ${INSTALL_HINT}`);
  }
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => has(join(root, v, 'bin')))
        .sort((a, b) => Number.parseFloat(b) - Number.parseFloat(a))
    : [];
  const newest = versions[0];
  if (newest !== undefined) return join(root, newest, 'bin');
  // Elsewhere than Debian: an initdb on PATH, with postgres beside its real file.
  for (const dir of (process.env['PATH'] ?? '').split(delimiter)) {
    const initdb = join(dir, 'initdb');
    if (dir && existsSync(initdb)) {
      const real = dirname(realpathSync(initdb));
      if (has(real)) return real;
    }
  }
  throw new Error(`PostgreSQL server binaries not found under ${root}/*/bin nor on PATH. ${INSTALL_HINT}`);
}

interface Account {
  name: string;
  uid: number;
  gid: number;
}

// PostgreSQL refuses to run as root. As root we run it as an unprivileged system account.
function serverAccount(): Account | null {
  if (process.getuid?.() !== 0) return null;
  const passwd = readFileSync('/etc/passwd', 'utf8').split('\n');
  for (const name of ['postgres', 'nobody']) {
    const line = passwd.find((l) => l.startsWith(`${name}:`));
    if (line === undefined) continue;
    const [, , uid, gid] = line.split(':');
    return { name, uid: Number(uid), gid: Number(gid) };
  }
  throw new Error('running as root, but neither a "postgres" nor a "nobody" account exists to run PostgreSQL as');
}

// Servers still running when the process exits (a test that threw before its cleanup):
// ask each to quit at once and remove its files.
const live = new Set<{ child: ChildProcess | null; baseDir: string }>();
let exitHookInstalled = false;
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', () => {
    for (const entry of live) {
      entry.child?.kill('SIGQUIT');
      rmSync(entry.baseDir, { recursive: true, force: true });
    }
  });
}

export async function startPostgres(opts: PostgresServerOptions = {}): Promise<PostgresServer> {
  const bin = findPostgresBin();
  const account = serverAccount();
  const baseDir = mkdtempSync(join(tmpdir(), 'palisade-pg-'));
  const dataDir = join(baseDir, 'data');
  const entry: { child: ChildProcess | null; baseDir: string } = { child: null, baseDir };
  live.add(entry);
  installExitHook();
  chmodSync(baseDir, 0o700);
  if (account) chownSync(baseDir, account.uid, account.gid);
  const as = account ? { uid: account.uid, gid: account.gid } : {};
  const env = { ...process.env, LC_ALL: 'C', LANG: 'C' };

  let logTail = '';
  const appendLog = (chunk: Buffer | string): void => {
    logTail = (logTail + chunk.toString()).slice(-LOG_LIMIT);
  };

  try {
    const init = spawnSync(
      join(bin, 'initdb'),
      ['-D', dataDir, '-U', SUPERUSER, '--auth=trust', '--encoding=UTF8', '--locale=C', '--no-sync'],
      { ...as, cwd: baseDir, env, encoding: 'utf8' },
    );
    if (init.error) throw init.error;
    if (init.status !== 0) throw new Error(`initdb failed (exit ${init.status}):\n${init.stdout}\n${init.stderr}`);
  } catch (err) {
    live.delete(entry);
    rmSync(baseDir, { recursive: true, force: true });
    throw err;
  }

  const settings: Record<string, string | number | boolean> = {
    listen_addresses: '127.0.0.1',
    unix_socket_directories: baseDir,
    max_connections: 100,
    ...(opts.durable ? {} : { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off' }),
    ...opts.settings,
  };
  const port = await freePort();
  const host = '127.0.0.1';
  const database = 'postgres';
  let child: ChildProcess | null = null;

  const connectionConfig = (extra: pg.PoolConfig = {}): pg.PoolConfig => ({ host, port, user: SUPERUSER, database, ...extra });

  async function waitReady(proc: ChildProcess): Promise<void> {
    const deadline = Date.now() + START_TIMEOUT_MS;
    for (;;) {
      if (proc.exitCode !== null || proc.signalCode !== null) {
        throw new Error(`PostgreSQL exited while starting (${proc.exitCode ?? proc.signalCode}):\n${logTail}`);
      }
      const client = new pg.Client(connectionConfig({ connectionTimeoutMillis: 1000 }));
      client.on('error', () => {});
      try {
        await client.connect();
        await client.query('SELECT 1');
        await client.end();
        return;
      } catch {
        await client.end().catch(() => {});
      }
      if (Date.now() > deadline) throw new Error(`PostgreSQL did not accept connections within ${START_TIMEOUT_MS} ms:\n${logTail}`);
      await sleep(50);
    }
  }

  async function start(): Promise<void> {
    if (child) return;
    const args = ['-D', dataDir, '-p', String(port)];
    for (const [name, value] of Object.entries(settings)) args.push('-c', `${name}=${value}`);
    const proc = spawn(join(bin, 'postgres'), args, { ...as, cwd: baseDir, env, stdio: ['ignore', 'pipe', 'pipe'] });
    proc.stdout?.on('data', appendLog);
    proc.stderr?.on('data', appendLog);
    // A forgotten server must not keep the test process alive; the exit hook stops it.
    proc.unref();
    (proc.stdout as Socket | null)?.unref();
    (proc.stderr as Socket | null)?.unref();
    const spawned = new Promise<void>((resolve, reject) => {
      proc.once('spawn', resolve);
      proc.once('error', reject);
    });
    child = proc;
    entry.child = proc;
    try {
      await spawned;
      await waitReady(proc);
    } catch (err) {
      await stop();
      throw err;
    }
  }

  async function stop(): Promise<void> {
    const proc = child;
    if (!proc) return;
    child = null;
    entry.child = null;
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    proc.kill('SIGINT'); // fast shutdown: roll back open transactions, disconnect clients
    const timer = setTimeout(() => proc.kill('SIGKILL'), STOP_TIMEOUT_MS);
    await exited;
    clearTimeout(timer);
  }

  let destroyed = false;
  async function destroy(): Promise<void> {
    if (destroyed) return;
    destroyed = true;
    try {
      await stop();
    } finally {
      live.delete(entry);
      rmSync(baseDir, { recursive: true, force: true });
    }
  }

  try {
    await start();
  } catch (err) {
    await destroy();
    throw err;
  }

  return {
    host,
    port,
    baseDir,
    dataDir,
    socketDir: baseDir,
    user: SUPERUSER,
    database,
    connectionString: `postgresql://${SUPERUSER}@${host}:${port}/${database}`,
    poolConfig: connectionConfig,
    stop,
    start,
    destroy,
    log: () => logTail,
  };
}

/** A pg.Pool on `server` with an error listener, as any long-lived pool needs. */
export function poolFor(server: PostgresServer, extra: pg.PoolConfig = {}): pg.Pool {
  const pool = new pg.Pool(server.poolConfig(extra));
  // pg reports errors of idle clients (a server that went away) on the pool; unheard,
  // they would crash the test process. The next checkout reports the failure instead.
  pool.on('error', () => {});
  return pool;
}

export interface PostgresFixture {
  /** The suite's server; read it inside tests and hooks, once `before` has run. */
  readonly server: PostgresServer;
}

export interface PostgresFixtureOptions extends PostgresServerOptions {
  /** Runs once the server is up (create pools, migrate); its failure fails the tests too. */
  setup?: (server: PostgresServer) => Promise<void>;
  /** Runs before the server is destroyed (end pools). */
  teardown?: () => Promise<void>;
}

/**
 * Registers node:test hooks that give the enclosing file or suite a server of its own. If
 * it cannot start (PostgreSQL not installed, say), every test of the suite FAILS with the
 * reason: node:test would only report tests after a failed `before` as cancelled, and
 * these tests must never pass by not running.
 */
export function usePostgres(opts: PostgresFixtureOptions = {}): PostgresFixture {
  let server: PostgresServer | undefined;
  let failure: unknown;
  before(async () => {
    try {
      server = await startPostgres(opts);
      await opts.setup?.(server);
    } catch (err) {
      failure = err;
    }
  });
  beforeEach(() => {
    if (failure !== undefined) throw failure;
  });
  after(async () => {
    try {
      if (server !== undefined && failure === undefined) await opts.teardown?.();
    } finally {
      await server?.destroy();
    }
  });
  return {
    get server(): PostgresServer {
      if (server === undefined) throw new Error('the PostgreSQL fixture is not started (use it inside tests and hooks)');
      return server;
    },
  };
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const server = await startPostgres();
  console.log(`PostgreSQL ready: ${server.connectionString}`);
  console.log(`  unix socket in ${server.socketDir}; Ctrl-C stops it and deletes its data`);
  const quit = (): void => {
    void server.destroy().then(() => process.exit(0));
  };
  process.once('SIGINT', quit);
  process.once('SIGTERM', quit);
  setInterval(() => {}, 1 << 30);
}
