// `palisade cluster` (what `npm start` runs), as real processes: a second run against data
// directories in use, a hangup, a port in use, a node lost, the parent killed, client TLS
// without a CA.
// Each says why on the terminal and exits non-zero; none leaves nodes running.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { CLI, TestCluster, until } from '../support/cluster.js';
import { makePki } from '../security/certs.js';

const clusters: TestCluster[] = [];
const supervisors: { p: ReturnType<typeof spawn>; pids: () => number[] }[] = [];
after(async () => {
  for (const s of supervisors) for (const pid of [s.p.pid!, ...s.pids()]) kill(pid, 'SIGKILL');
  for (const c of clusters) await c.stop();
});

function kill(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // already gone
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** `palisade cluster`, directly or under `sh -c` (as npm runs a script). */
function supervisor(config: string, viaShell = false) {
  const p = viaShell
    ? spawn('sh', ['-c', `"${process.execPath}" "${CLI}" cluster --config "${config}"; echo shell-done`], { stdio: ['ignore', 'pipe', 'pipe'] })
    : spawn(process.execPath, [CLI, 'cluster', '--config', config], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  p.stdout!.on('data', (d) => (out += d));
  p.stderr!.on('data', (d) => (err += d));
  const done = new Promise<{ code: number | null; out: string; err: string }>((r) => p.on('exit', (code) => r({ code, out, err })));
  const pids = () => [...out.matchAll(/^node \S+\s+pid (\d+)/gm)].map((m) => Number(m[1]));
  const s = { p, done, pids, output: () => out, errors: () => err };
  supervisors.push(s);
  return s;
}

async function newCluster(extra: Parameters<typeof TestCluster.create>[0] = {}): Promise<TestCluster> {
  const c = await TestCluster.create(extra);
  clusters.push(c);
  return c;
}

test('a second palisade cluster on data directories in use exits non-zero with the reason, never "leader elected"', async () => {
  const c = await newCluster();
  const first = supervisor(c.configPath);
  await until(() => first.output().includes('leader elected'), 30_000, 'the first cluster');
  const second = await supervisor(c.configPath).done;
  assert.notEqual(second.code, 0);
  assert.doesNotMatch(second.out, /leader elected/);
  assert.match(second.err, /lock|in use|EADDRINUSE/i, second.err);
  assert.match(second.err, /node n\d exited \(code 1\)/);
  // The first cluster is untouched; SIGTERM stops it and its nodes.
  const pids = first.pids();
  assert.equal(pids.length, 3);
  assert.ok(pids.every(alive));
  first.p.kill('SIGTERM');
  assert.equal((await first.done).code, 0);
  await until(() => pids.every((p) => !alive(p)), 15_000, 'the nodes stopped');
});

test('a hangup (the terminal closed) stops palisade cluster and its nodes, though the nodes take SIGHUP as a reload', async () => {
  const c = await newCluster();
  const s = supervisor(c.configPath);
  await until(() => s.output().includes('leader elected'), 30_000, 'the cluster');
  const pids = s.pids();
  assert.equal(pids.length, 3);
  // A closed terminal signals the whole foreground process group: the supervisor and its nodes.
  for (const pid of [s.p.pid!, ...pids]) kill(pid, 'SIGHUP');
  assert.equal((await s.done).code, 0);
  await until(() => pids.every((p) => !alive(p)), 15_000, 'the nodes stopped');
});

test('a port in use: the node says EADDRINUSE, the cluster says it lost fault tolerance; losing one more stops it with exit 1', async () => {
  const c = await newCluster();
  const port = Number(new URL(c.node('n1').clientUrl).port);
  const squatter: Server = createServer();
  await new Promise<void>((r) => squatter.listen(port, '127.0.0.1', r));
  try {
    const s = supervisor(c.configPath);
    await until(() => s.output().includes('leader elected'), 30_000, 'a leader of two');
    await until(() => s.errors().includes('lost fault tolerance'), 10_000, 'the warning');
    assert.match(s.errors(), /node n1 exited \(code 1\)/);
    assert.match(s.errors(), /n1: .*EADDRINUSE/);
    assert.match(s.errors(), /2 of 3 up: one more failure stops writes/);
    const [, p2, p3] = s.pids();
    kill(p2!, 'SIGKILL');
    const r = await s.done;
    assert.equal(r.code, 1);
    assert.match(r.err, /node n2 exited \(SIGKILL\)/);
    assert.match(r.out, /quorum lost \(1 of 3 up: no quorum/);
    await until(() => !alive(p3!), 15_000, 'the last node stopped');
  } finally {
    squatter.close();
  }
});

test('killing the shell that runs palisade cluster (npm start) stops the supervisor and its nodes', async () => {
  const c = await newCluster();
  const s = supervisor(c.configPath, true);
  await until(() => s.output().includes('leader elected'), 30_000, 'the cluster');
  const pids = s.pids();
  assert.equal(pids.length, 3);
  s.p.kill('SIGKILL'); // the shell: the signal is not passed on
  await until(() => pids.every((p) => !alive(p)), 15_000, 'the nodes stopped after their supervisor\'s parent died');
});

test('client TLS without a CA for the supervisor\'s probes fails fast with what to set', async () => {
  const pki = makePki();
  try {
    for (const id of ['n1', 'n2', 'n3']) pki.issue(id);
    const files = { cert: `${pki.dir}/{id}.crt`, key: `${pki.dir}/{id}.key` };
    const c = await newCluster({ secure: { client: true }, extraConfig: { tls: { client: files } } });
    const started = Date.now();
    const r = await supervisor(c.configPath).done;
    assert.equal(r.code, 1);
    assert.match(r.err, /TLS certificate/);
    assert.match(r.err, /tls\.client\.ca/);
    assert.ok(Date.now() - started < 20_000);
    const pids = [...r.out.matchAll(/^node \S+\s+pid (\d+)/gm)].map((m) => Number(m[1]));
    await until(() => pids.every((p) => !alive(p)), 15_000, 'the nodes stopped');
  } finally {
    pki.remove();
  }
});
