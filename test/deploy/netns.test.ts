// @system: a system suite (scripts/run-tests.mjs): run by `npm run test:system` and CI.
// docs/deployment.md, followed: three hosts, each in its own network namespace with its own
// address (a bridge in a hub namespace of its own), clients in a fifth. The release tarball is
// packed and installed as step 1 says; the shell blocks the page marks
// `<!-- deployment step: NAME -->` run as written, with only the addresses (10.0.0.N) and the
// directories /opt/palisade, /etc/palisade and /var/lib/palisade changed; deploy/cluster.config.json
// is used as the page makes it, and each node runs the ExecStart line of
// deploy/palisade@.service. Then the leader is SIGKILLed, a follower is cut off and comes back,
// and a host is replaced as step 7 says: removed, wiped, joined over wss:// with the config's
// tls.client.ca. All traffic stays inside the namespaces. Needs root, iproute2 and openssl;
// skipped otherwise.
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { ROOT, sleep } from '../support/node-process.js';

const canRun = process.getuid?.() === 0 && (() => {
  try {
    for (const tool of [['ip', 'netns', 'list'], ['openssl', 'version'], ['npm', '--version']]) execFileSync(tool[0]!, tool.slice(1), { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

const tag = `pl${process.pid % 100000}`;
const hub = `${tag}hub`;
const subnet = `10.${200 + (process.pid % 50)}.${process.pid % 250}`;
const hosts = [1, 2, 3].map((i) => ({ id: `n${i}`, ns: `${tag}n${i}`, ip: `${subnet}.${i}` }));
const clientNs = { ns: `${tag}cl`, ip: `${subnet}.10` };
const base = mkdtempSync(join(tmpdir(), 'palisade-netns-'));
/** The machine's directories of the guide, here. */
const OPT = join(base, 'opt/palisade');
const ETC = join(base, 'etc/palisade');
const LIB = join(base, 'var/lib/palisade');
/** On the PATH of every step: `palisade` (the guide's symlink into /usr/local/bin), node, npm. */
const BIN = join(base, 'bin');
const procs = new Map<string, ChildProcess>();

/** The only changes made to what the guide and the deploy files say: addresses and directories. */
function here(text: string): string {
  return text.replaceAll('/opt/palisade', OPT).replaceAll('/etc/palisade', ETC).replaceAll('/var/lib/palisade', LIB).replaceAll('10.0.0.', `${subnet}.`);
}

const GUIDE = readFileSync(join(ROOT, 'docs/deployment.md'), 'utf8');

/** The shell block the guide marks `<!-- deployment step: NAME -->`, unindented. */
function step(name: string): string {
  const m = new RegExp(`^([ \\t]*)<!-- deployment step: ${name} -->\\n[ \\t]*\`\`\`sh\\n([\\s\\S]*?)\\n[ \\t]*\`\`\`$`, 'm').exec(GUIDE);
  assert.ok(m, `docs/deployment.md marks a step "${name}"`);
  const indent = m[1]!;
  return m[2]!.split('\n').map((l) => (l.startsWith(indent) ? l.slice(indent.length) : l)).join('\n');
}

const env = { ...process.env, PATH: `${BIN}:${dirname(process.execPath)}:${process.env.PATH ?? ''}` };

/** Runs a step's commands (addresses and directories changed) with bash, in a namespace or not. */
function runStep(script: string, opts: { ns?: string; cwd?: string; extraEnv?: Record<string, string> } = {}): string {
  const argv = [...(opts.ns ? ['ip', 'netns', 'exec', opts.ns] : []), 'bash', '-euo', 'pipefail', '-c', here(script)];
  try {
    return execFileSync(argv[0]!, argv.slice(1), { cwd: opts.cwd ?? base, env: { ...env, ...opts.extraEnv }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 120_000 });
  } catch (e) {
    const x = e as { stdout?: string; stderr?: string; message: string };
    throw new Error(`step failed: ${x.message}\n${x.stdout ?? ''}\n${x.stderr ?? ''}\n${logs()}`);
  }
}

/** The environment step 5 exports for client commands, taken from its `export` lines. */
const clientExports = (): string => step('check').split('\n').filter((l) => l.startsWith('export ')).join('\n');

function sh(args: string[]): string {
  return execFileSync(args[0]!, args.slice(1), { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

function setUpNetwork(): void {
  sh(['ip', 'netns', 'add', hub]);
  sh(['ip', 'netns', 'exec', hub, 'ip', 'link', 'add', 'br0', 'type', 'bridge']);
  sh(['ip', 'netns', 'exec', hub, 'ip', 'link', 'set', 'br0', 'up']);
  for (const [i, h] of [...hosts, clientNs].entries()) {
    sh(['ip', 'netns', 'add', h.ns]);
    // The veth pair is made inside the hub, one end moved into the host's namespace.
    sh(['ip', 'netns', 'exec', hub, 'ip', 'link', 'add', `h${i}`, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', h.ns]);
    sh(['ip', 'netns', 'exec', hub, 'ip', 'link', 'set', `h${i}`, 'master', 'br0', 'up']);
    sh(['ip', 'netns', 'exec', h.ns, 'ip', 'addr', 'add', `${h.ip}/24`, 'dev', 'eth0']);
    sh(['ip', 'netns', 'exec', h.ns, 'ip', 'link', 'set', 'eth0', 'up']);
    sh(['ip', 'netns', 'exec', h.ns, 'ip', 'link', 'set', 'lo', 'up']);
  }
}

function tearDownNetwork(): void {
  for (const ns of [...hosts.map((h) => h.ns), clientNs.ns, hub]) {
    try {
      sh(['ip', 'netns', 'del', ns]);
    } catch {
      // not created
    }
  }
}

/** Step 0 and 1: the tarball, installed under OPT as the guide installs it (offline: it
 *  bundles its dependencies), and the `palisade` command on the PATH. */
function install(): void {
  const packed = JSON.parse(execFileSync('npm', ['pack', '--json', '--pack-destination', base], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })) as { filename: string }[];
  assert.match(step('install'), new RegExp(`\\./${packed[0]!.filename.replaceAll('.', '\\.')}`), 'the guide installs the tarball npm pack makes');
  for (const d of [join(ETC, 'certs'), LIB, BIN]) mkdirSync(d, { recursive: true });
  runStep(step('install'), { extraEnv: { npm_config_offline: 'true' } });
  assert.ok(!existsSync(join(OPT, 'node_modules/typescript')), 'no compiler on the host');
  symlinkSync(join(OPT, 'node_modules/.bin/palisade'), join(BIN, 'palisade'));
}

/** Step 3, and the operator's edit: the hosts' addresses (and here, the data directories;
 *  the step itself ran with /opt/palisade already changed). */
function configure(): void {
  runStep(step('config'));
  const path = join(ETC, 'cluster.config.json');
  const made = readFileSync(path, 'utf8');
  execFileSync('bash', ['-c', `cat > '${path}'`], { input: made.replaceAll('/var/lib/palisade', LIB).replaceAll('10.0.0.', `${subnet}.`) });
  const cfg = JSON.parse(made) as { $schema: string; secret: string; auth: { tokens: { token: string }[] } };
  assert.ok(existsSync(resolve(ETC, cfg.$schema)), `$schema names the installed schema: ${cfg.$schema}`);
  // Verbatim but for what the guide's sed filled in.
  const back = made.replace(cfg.secret, '@SECRET@').replace(cfg.auth.tokens[0]!.token, '@OPS_TOKEN@').replace(`"${cfg.$schema}"`, '"../config.schema.json"');
  assert.equal(back, readFileSync(join(ROOT, 'deploy/cluster.config.json'), 'utf8'));
}

/** The unit's ExecStart for one instance, with node where it is here. */
function execStart(id: string): string[] {
  const line = /^ExecStart=(.*)$/m.exec(readFileSync(join(ROOT, 'deploy/palisade@.service'), 'utf8'))![1]!;
  return here(line.replaceAll('%i', id)).split(' ').map((w) => (w === '/usr/bin/node' ? process.execPath : w));
}

function startNode(h: (typeof hosts)[number]): void {
  const log = openSync(join(base, `${h.id}.log`), 'a');
  procs.set(h.id, spawn('ip', ['netns', 'exec', h.ns, ...execStart(h.id)], { stdio: ['ignore', log, log] }));
}

/** The installed CLI in the clients' namespace, with step 5's environment. */
function tryClient(args: string[]): { code: number | null; out: string; err: string } {
  const script = here(`${clientExports()}\npalisade ${args.map((a) => `'${a}'`).join(' ')}`);
  const r = spawnSync('ip', ['netns', 'exec', clientNs.ns, 'bash', '-euo', 'pipefail', '-c', script], { env, encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

function client(args: string[]): string {
  const r = tryClient(args);
  if (r.code !== 0) throw new Error(`palisade ${args.join(' ')} exited ${r.code}: ${r.err}\n${logs()}`);
  return r.out;
}

interface Row { id: string; role: string; term: number | null; leader: string | null; appliedIndex: number | null }

/** Every node's row; status exits 69 while no node answers (still starting), with the rows. */
function status(): Row[] {
  const r = tryClient(['status', '--json']);
  if (r.code !== 0 && r.code !== 69) throw new Error(`palisade status exited ${r.code}: ${r.err}`);
  return (JSON.parse(r.out) as { nodes: Row[] }).nodes;
}

async function agreedLeader(exclude: string[] = [], timeoutMs = 30_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const rows = status().filter((r) => r.term !== null && !exclude.includes(r.id));
    const leaders = rows.filter((r) => r.role === 'leader');
    if (leaders.length === 1 && rows.length >= 2 && rows.every((r) => r.leader === leaders[0]!.id)) return leaders[0]!.id;
    if (Date.now() > deadline) throw new Error(`no agreed leader: ${JSON.stringify(status())}\n${logs()}`);
    await sleep(250);
  }
}

async function caughtUp(timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const rows = status();
    const applied = rows.map((r) => r.appliedIndex ?? -1);
    if (rows.every((r) => r.term !== null) && applied.every((a) => a === applied[0])) return;
    if (Date.now() > deadline) throw new Error(`the nodes did not catch up: ${JSON.stringify(rows)}\n${logs()}`);
    await sleep(250);
  }
}

function exited(p: ChildProcess): Promise<void> {
  return p.exitCode !== null || p.signalCode !== null ? Promise.resolve() : new Promise((r) => p.once('exit', () => r()));
}

function logs(): string {
  return [...hosts.map((h) => h.id), 'n3-join'].map((id) => { try { return `--- ${id}\n${execFileSync('tail', ['-c', '1500', join(base, `${id}.log`)], { encoding: 'utf8' })}`; } catch { return ''; } }).join('\n');
}

before(() => {
  if (!canRun) return;
  setUpNetwork();
});

after(() => {
  for (const p of procs.values()) {
    try {
      process.kill(-p.pid!, 'SIGKILL'); // the join's process group
    } catch {
      p.kill('SIGKILL');
    }
  }
  if (canRun) tearDownNetwork();
  rmSync(base, { recursive: true, force: true });
});

test('docs/deployment.md in three namespaces: install from the tarball, TLS, failover, a partition, a host replaced with a TLS join', { skip: !canRun && 'needs root, ip netns, openssl and npm', timeout: 600_000 }, async () => {
  install();
  runStep(step('certificates'));
  configure();
  for (const h of hosts) startNode(h);
  const first = await agreedLeader();

  // Step 5's check, as written (curl asks n1's readiness on its own address).
  const checked = runStep(step('check'), { ns: clientNs.ns });
  assert.match(checked, /3 of 3 up/);
  assert.match(checked, /n3\s+voter/);
  client(['kv', 'put', 'deploy/a', 'one']);
  assert.match(client(['kv', 'get', 'deploy/a']), /one/);

  // The leader dies; the other two elect a new one and keep serving.
  procs.get(first)!.kill('SIGKILL');
  await exited(procs.get(first)!);
  const second = await agreedLeader([first]);
  assert.notEqual(second, first);
  client(['kv', 'put', 'deploy/b', 'two']);
  startNode(hosts.find((h) => h.id === first)!);
  await caughtUp();

  // A follower cut off from the others (its link down) misses writes, then catches up.
  const leader = await agreedLeader();
  const cut = hosts.find((h) => h.id !== leader)!;
  sh(['ip', 'netns', 'exec', cut.ns, 'ip', 'link', 'set', 'eth0', 'down']);
  client(['kv', 'put', 'deploy/c', 'three']);
  sh(['ip', 'netns', 'exec', cut.ns, 'ip', 'link', 'set', 'eth0', 'up']);
  await caughtUp();
  assert.match(client(['kv', 'get', 'deploy/c']), /three/);

  // Step 7: n3's host is lost and replaced. Removed through the CLI (the removed node is told
  // and stops), its disk gone, and started on the "new host" with --join over wss://.
  const n3 = hosts.find((h) => h.id === 'n3')!;
  if ((await agreedLeader()) === 'n3') client(['transfer-leader']);
  runStep(`${clientExports()}\n${step('remove')}`, { ns: clientNs.ns });
  await exited(procs.get('n3')!);
  rmSync(join(LIB, 'n3'), { recursive: true, force: true });
  const joinLog = openSync(join(base, 'n3-join.log'), 'a');
  // In a process group of its own, as in a terminal, so that Ctrl-C reaches the node.
  const joining = spawn('ip', ['netns', 'exec', n3.ns, 'bash', '-euo', 'pipefail', '-c', here(step('join'))], { env, stdio: ['ignore', joinLog, joinLog], detached: true });
  procs.set('n3', joining);
  const deadline = Date.now() + 60_000;
  while (!/n3\s+voter/.test(client(['member', 'list']))) {
    if (joining.exitCode !== null) throw new Error(`the join exited ${joining.exitCode}\n${logs()}`);
    if (Date.now() > deadline) throw new Error(`n3 did not become a voter: ${client(['member', 'list'])}\n${logs()}`);
    await sleep(500);
  }
  assert.match(readFileSync(join(base, 'n3-join.log'), 'utf8'), /asked the cluster to add this node as a learner/);
  // "stop it (Ctrl-C) and run it as palisade@n3 from then on"
  process.kill(-joining.pid!, 'SIGINT');
  await exited(joining);
  assert.equal(joining.exitCode, 0, logs());
  startNode(n3);
  await caughtUp();
  assert.match(client(['kv', 'get', 'deploy/c']), /three/);
  assert.equal(status().length, 3);
});
