// `palisade cluster`: start every node of a config on this machine as child processes,
// print their endpoints and the leader once one is elected, stop them all on Ctrl-C/SIGTERM
// or when this process's parent goes away (`npm start` killed: npm may not pass the signal
// on). A node that exits says why on the terminal (from its log), and the supervisor says
// what the cluster can still survive; without a quorum it stops the rest and exits 1.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, openSync } from 'node:fs';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig, type ClusterConfig } from '../config/cluster-config.js';
import { fetchStatus, formatStatus, type StatusRow } from './status.js';
import { credentialsForConfig, rpcCredentials } from './credentials.js';
import { failureLines, logOffset } from './node-log.js';
import { faultTolerance } from './quorum.js';

/** The command line that runs this CLI again (compiled JS, or TS under the same loader). */
export function selfCommand(): { cmd: string; args: string[] } {
  const here = fileURLToPath(import.meta.url);
  const main = join(dirname(here), `main${extname(here)}`);
  return { cmd: process.execPath, args: [...process.execArgv, main] };
}

/** How often the supervisor checks that its parent is still there. */
const PARENT_CHECK_MS = 500;
/** How long stopped nodes get to exit before they are killed. */
const STOP_GRACE_MS = 10_000;

const say = (s: string): boolean => process.stdout.write(`${s}\n`);
const warn = (s: string): boolean => process.stderr.write(`palisade cluster: ${s}\n`);

export async function cluster(opts: { config: string; logLevel: string }): Promise<void> {
  const config = loadConfig(opts.config);
  const credentials = probeCredentials(config);
  const { cmd, args } = selfCommand();
  const children = new Map<string, ChildProcess>();
  const ours = new Set<number>();
  const total = config.nodes.length;
  let stopping = false;
  let exitCode = 0;

  const stop = (why: string, code: number) => {
    if (stopping) return;
    stopping = true;
    exitCode = code;
    say(`${why}: stopping ${children.size} node(s)...`);
    for (const c of children.values()) c.kill('SIGTERM');
    if (children.size === 0) process.exit(exitCode);
    setTimeout(() => {
      for (const c of children.values()) c.kill('SIGKILL');
      process.exit(exitCode || 1);
    }, STOP_GRACE_MS).unref();
  };

  for (const n of config.nodes) {
    mkdirSync(dirname(n.dataDir), { recursive: true });
    const logPath = `${n.dataDir}.log`;
    const from = logOffset(logPath);
    const out = openSync(logPath, 'a');
    const child = spawn(cmd, [...args, 'serve', '--config', opts.config, '--id', n.id, '--log-level', opts.logLevel], {
      stdio: ['ignore', out, out],
    });
    children.set(n.id, child);
    if (child.pid !== undefined) ours.add(child.pid);
    child.on('exit', (code, signal) => {
      children.delete(n.id);
      if (stopping) {
        if (children.size === 0) process.exit(exitCode);
        return;
      }
      warn(`node ${n.id} exited (${signal ?? `code ${code}`}); log ${logPath}`);
      for (const line of failureLines(logPath, from)) warn(`  ${n.id}: ${line}`);
      const ft = faultTolerance(children.size, total);
      if (ft.danger === 'down') stop(`quorum lost (${ft.text})`, 1);
      else warn(`the cluster lost fault tolerance: ${ft.text}`);
    });
    say(`node ${n.id}  pid ${child.pid}  client ${n.clientUrl}  peer ${n.peerUrl}  log ${logPath}`);
  }

  process.on('SIGINT', () => stop('SIGINT', 0));
  process.on('SIGTERM', () => stop('SIGTERM', 0));
  // A hangup (the terminal closed) ends the cluster: its nodes, in the same process group,
  // take SIGHUP as "reload the config" and would otherwise run on without it.
  process.on('SIGHUP', () => stop('SIGHUP', 0));
  watchParent(() => stop('the parent process exited', 1));

  const endpoints = config.nodes.map((n) => n.clientUrl);
  const started = Date.now();
  const strangers = new Set<string>();
  for (;;) {
    if (stopping) return;
    const rows = await fetchStatus(endpoints, 500, credentials);
    if (stopping) return;
    const tlsProblem = rows.find((r) => 'error' in r && /TLS certificate|TLS handshake/.test(r.error));
    if (tlsProblem && 'error' in tlsProblem) {
      warn(`cannot check the nodes it started: ${tlsProblem.error}`);
      warn('the client port uses TLS: set tls.client.ca in the config (or $PALISADE_CA) to the CA that signs the nodes\' certificates');
      stop('no status probes', 1);
      return;
    }
    // A node answering at our endpoint with another pid is someone else's (a cluster already
    // running on these ports): never report it as ours.
    for (const r of rows) {
      if (!('error' in r) && !ours.has(r.pid) && !strangers.has(r.endpoint)) {
        strangers.add(r.endpoint);
        warn(`${r.endpoint} is answered by another process (node ${r.id}, pid ${r.pid}), not the node started here`);
      }
    }
    const mine = rows.filter((r): r is StatusRow & { pid: number } => !('error' in r) && ours.has(r.pid));
    const leader = mine.find((r) => r.role === 'leader');
    if (leader && 'term' in leader) {
      say(`\nleader elected: ${leader.id} (term ${leader.term}) after ${Date.now() - started} ms\n`);
      say(`${formatStatus(rows)}\n`);
      say(`endpoints: ${endpoints.join(',')}`);
      const page = config.nodes.find((n) => n.httpUrl !== undefined)?.httpUrl;
      if (page) say(`status page: ${page}/`);
      say(`${faultTolerance(children.size, total).text}\nCtrl-C stops the cluster.`);
      return;
    }
    if (children.size === 0) {
      warn('every node exited before a leader was elected');
      process.exit(1);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The credentials for the supervisor's own probes, or exit with what to fix. */
function probeCredentials(config: ClusterConfig) {
  try {
    return rpcCredentials(credentialsForConfig(config, process.env));
  } catch (e) {
    warn((e as Error).message);
    process.exit(1);
  }
}

/**
 * Calls `onGone` when this process's parent exits (it is re-parented, so its ppid changes).
 * `npm start` killed with SIGTERM exits without passing the signal on; the nodes must not
 * outlive it under pid 1.
 */
function watchParent(onGone: () => void): void {
  const parent = process.ppid;
  const timer = setInterval(() => {
    if (process.ppid !== parent) {
      clearInterval(timer);
      onGone();
    }
  }, PARENT_CHECK_MS);
  timer.unref();
}
