// `palisade cluster`: start every node of a config on this machine as child processes,
// print their endpoints and the leader once one is elected, stop them all on Ctrl-C/SIGTERM.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, openSync } from 'node:fs';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../server/config.js';
import { fetchStatus, formatStatus } from './status.js';
import { credentialsForConfig, rpcCredentials } from './credentials.js';

/** The command line that runs this CLI again (compiled JS, or TS under the same loader). */
export function selfCommand(): { cmd: string; args: string[] } {
  const here = fileURLToPath(import.meta.url);
  const main = join(dirname(here), `main${extname(here)}`);
  return { cmd: process.execPath, args: [...process.execArgv, main] };
}

export async function cluster(opts: { config: string; logLevel: string }): Promise<void> {
  const config = loadConfig(opts.config);
  const { cmd, args } = selfCommand();
  const children = new Map<string, ChildProcess>();
  let stopping = false;

  for (const n of config.nodes) {
    mkdirSync(dirname(n.dataDir), { recursive: true });
    const logPath = `${n.dataDir}.log`;
    const out = openSync(logPath, 'a');
    const child = spawn(cmd, [...args, 'serve', '--config', opts.config, '--id', n.id, '--log-level', opts.logLevel], {
      stdio: ['ignore', out, out],
    });
    children.set(n.id, child);
    child.on('exit', (code, signal) => {
      children.delete(n.id);
      if (!stopping) process.stdout.write(`node ${n.id} exited (${signal ?? `code ${code}`}); see ${logPath}\n`);
      if (stopping && children.size === 0) process.exit(0);
    });
    process.stdout.write(`node ${n.id}  pid ${child.pid}  client ${n.clientUrl}  peer ${n.peerUrl}  log ${logPath}\n`);
  }

  const stop = (sig: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    process.stdout.write(`stopping ${children.size} node(s)...\n`);
    for (const c of children.values()) c.kill('SIGTERM');
    if (children.size === 0) process.exit(0);
    setTimeout(() => {
      for (const c of children.values()) c.kill('SIGKILL');
      process.exit(sig === 'SIGINT' ? 130 : 0);
    }, 10_000).unref();
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));

  const endpoints = config.nodes.map((n) => n.clientUrl);
  const credentials = rpcCredentials(credentialsForConfig(config, process.env));
  const started = Date.now();
  for (;;) {
    if (stopping) return;
    const rows = await fetchStatus(endpoints, 500, credentials);
    const leader = rows.find((r) => r.role === 'leader');
    if (leader && 'term' in leader) {
      process.stdout.write(`\nleader elected: ${leader.id} (term ${leader.term}) after ${Date.now() - started} ms\n\n`);
      process.stdout.write(`${formatStatus(rows)}\n\n`);
      process.stdout.write(`endpoints: ${endpoints.join(',')}\nCtrl-C stops the cluster.\n`);
      return;
    }
    if (children.size === 0) {
      process.stderr.write('every node exited before a leader was elected\n');
      process.exit(1);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}
