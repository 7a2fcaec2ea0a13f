// Three hosts, as docs/deployment.md deploys them: each node in its own network namespace
// with its own address, TLS on both ports with a certificate per node naming that address,
// clients in a fourth namespace. All traffic stays inside the namespaces (a bridge in a hub
// namespace of its own). Then the leader is SIGKILLed, and one node is cut off and comes back.
// Needs root and iproute2 (`ip netns`); skipped otherwise.
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { CLI, sleep } from '../support/node-process.js';

const canRun = process.getuid?.() === 0 && (() => {
  try {
    execFileSync('ip', ['netns', 'list'], { stdio: 'ignore' });
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
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
const dir = mkdtempSync(join(tmpdir(), 'palisade-netns-'));
const procs = new Map<string, ChildProcess>();
const SECRET = 'netns-test-secret-0123456789abcdef';

function sh(args: string[]): string {
  return execFileSync(args[0]!, args.slice(1), { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

function openssl(args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
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

function makeCerts(): void {
  const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl(['req', '-x509', ...EC, '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', '/CN=netns-ca',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign']);
  for (const h of hosts) {
    writeFileSync(join(dir, `${h.id}.cnf`), `subjectAltName=IP:${h.ip}\nextendedKeyUsage=serverAuth,clientAuth\nbasicConstraints=CA:FALSE\n`);
    openssl(['req', ...EC, '-keyout', `${h.id}.key`, '-out', `${h.id}.csr`, '-subj', `/CN=${h.id}`]);
    openssl(['x509', '-req', '-in', `${h.id}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${h.id}.crt`, '-days', '2', '-extfile', `${h.id}.cnf`]);
  }
}

const configPath = join(dir, 'cluster.config.json');
const endpoints = hosts.map((h) => `wss://${h.ip}:7001`).join(',');

function writeConfig(): void {
  writeFileSync(
    configPath,
    JSON.stringify({
      clusterId: 'netns-test',
      secret: SECRET,
      nodes: hosts.map((h) => ({ id: h.id, peerUrl: `wss://${h.ip}:7101`, clientUrl: `wss://${h.ip}:7001`, dataDir: join(dir, h.id) })),
      raft: { tickMs: 10, heartbeatMs: 50, electionTimeoutMs: 300 },
      sessions: { defaultTtlMs: 10_000, minTtlMs: 600, maxTtlMs: 600_000, lockDelayMs: 0 },
      tls: {
        peer: { cert: '{id}.crt', key: '{id}.key', ca: 'ca.crt', requireClientCert: true },
        client: { cert: '{id}.crt', key: '{id}.key' },
      },
    }),
  );
}

function startNode(h: (typeof hosts)[number]): void {
  const log = openSync(join(dir, `${h.id}.log`), 'a');
  const p = spawn('ip', ['netns', 'exec', h.ns, process.execPath, CLI, 'serve', '--config', configPath, '--id', h.id], { stdio: ['ignore', log, log] });
  procs.set(h.id, p);
}

/** The CLI, run in the clients' namespace against every node. */
function client(args: string[]): string {
  return execFileSync('ip', ['netns', 'exec', clientNs.ns, process.execPath, CLI, ...args, '--endpoints', endpoints, '--ca', join(dir, 'ca.crt')], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 30_000,
  });
}

interface Row { id: string; role: string; term: number | null; leader: string | null; appliedIndex: number | null }

/** Every node's row; status exits 69 while no node answers (still starting), with the rows. */
function status(): Row[] {
  try {
    return (JSON.parse(client(['status', '--json'])) as { nodes: Row[] }).nodes;
  } catch (e) {
    const out = (e as { stdout?: string }).stdout;
    if (!out) throw e;
    return (JSON.parse(out) as { nodes: Row[] }).nodes;
  }
}

async function agreedLeader(exclude: string[] = [], timeoutMs = 20_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const rows = status().filter((r) => r.term !== null && !exclude.includes(r.id));
    const leaders = rows.filter((r) => r.role === 'leader');
    if (leaders.length === 1 && rows.every((r) => r.leader === leaders[0]!.id)) return leaders[0]!.id;
    if (Date.now() > deadline) throw new Error(`no agreed leader: ${JSON.stringify(status())}\n${logs()}`);
    await sleep(200);
  }
}

function logs(): string {
  return hosts.map((h) => { try { return `--- ${h.id}\n${execFileSync('tail', ['-c', '1500', join(dir, `${h.id}.log`)], { encoding: 'utf8' })}`; } catch { return ''; } }).join('\n');
}

before(() => {
  if (!canRun) return;
  setUpNetwork();
  makeCerts();
  writeConfig();
});

after(() => {
  for (const p of procs.values()) p.kill('SIGKILL');
  if (canRun) tearDownNetwork();
  rmSync(dir, { recursive: true, force: true });
});

test('three nodes in three namespaces with TLS: a leader SIGKILL and a partitioned node', { skip: !canRun && 'needs root, ip netns and openssl' }, async () => {
  for (const h of hosts) startNode(h);
  const first = await agreedLeader();
  client(['kv', 'put', 'deploy/a', 'one']);
  assert.match(client(['kv', 'get', 'deploy/a']), /one/);

  // The leader dies; the other two elect a new one and keep serving.
  procs.get(first)!.kill('SIGKILL');
  const second = await agreedLeader([first]);
  assert.notEqual(second, first);
  client(['kv', 'put', 'deploy/b', 'two']);
  startNode(hosts.find((h) => h.id === first)!);

  // A follower cut off from the others (its link down) misses writes, then catches up.
  await agreedLeader();
  const leader = await agreedLeader();
  const cut = hosts.find((h) => h.id !== leader)!;
  sh(['ip', 'netns', 'exec', cut.ns, 'ip', 'link', 'set', 'eth0', 'down']);
  client(['kv', 'put', 'deploy/c', 'three']);
  sh(['ip', 'netns', 'exec', cut.ns, 'ip', 'link', 'set', 'eth0', 'up']);
  const deadline = Date.now() + 20_000;
  for (;;) {
    const rows = status();
    const applied = rows.map((r) => r.appliedIndex ?? -1);
    if (rows.every((r) => r.term !== null) && applied.every((a) => a === applied[0])) break;
    if (Date.now() > deadline) throw new Error(`the cut node did not catch up: ${JSON.stringify(rows)}`);
    await sleep(200);
  }
  assert.match(client(['kv', 'get', 'deploy/c']), /three/);
});
