// Advertised and listen addresses: which may repeat (the rules on checkAddresses in
// src/config/addresses.ts), and a real cluster whose nodes bind one address and are reached at
// another, as behind NAT or a container's port mapping: here a TCP forwarder per port stands
// for the mapping, and the nodes only ever learn the forwarders' addresses.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { ConfigError, validateConfig } from '../../src/config/cluster-config.js';
import { exposureProblems } from '../../src/server/exposure.js';
import { rpc } from '../../src/protocol/rpc.js';
import { freePorts, settleAll, signalNode, startNode, until } from '../support/node-process.js';

const base = { clusterId: 'addr', secret: 'addresses-test-secret-0123' };
const refused = (raw: unknown, field: string, message: RegExp) =>
  assert.throws(() => validateConfig(raw, '/tmp'), (e: unknown) => e instanceof ConfigError && e.field === field && message.test(e.message));

describe('which addresses may repeat', () => {
  const hosts = (urls: (i: number) => Record<string, string>) => ({ ...base, nodes: [1, 2, 3].map((i) => ({ id: `n${i}`, dataDir: `d${i}`, ...urls(i) })) });

  test('three hosts may use the same ports', () => {
    assert.ok(validateConfig(hosts((i) => ({ peerUrl: `ws://10.0.0.${i}:7101`, clientUrl: `ws://10.0.0.${i}:7001`, httpUrl: `http://10.0.0.${i}:7301` })), '/tmp'));
  });

  test('three hosts may each bind every interface on the same ports', () => {
    const c = validateConfig(hosts((i) => ({ peerUrl: `ws://10.0.0.${i}:7101`, listenPeerUrl: 'ws://0.0.0.0:7101', clientUrl: `ws://10.0.0.${i}:7001`, listenClientUrl: 'ws://0.0.0.0:7001' })), '/tmp');
    assert.equal(c.nodes[2]!.listenPeerUrl, 'ws://0.0.0.0:7101');
    assert.equal(c.nodes[2]!.peerUrl, 'ws://10.0.0.3:7101');
  });

  test('containers behind one address with mapped ports may bind the same port inside', () => {
    assert.ok(validateConfig(hosts((i) => ({ peerUrl: `ws://192.168.1.5:710${i}`, listenPeerUrl: 'ws://0.0.0.0:7101', clientUrl: `ws://192.168.1.5:700${i}`, listenClientUrl: 'ws://0.0.0.0:7001' })), '/tmp'));
  });

  test('a shared loopback status page on every host is refused, pointing at listenHttpUrl', () => {
    refused(
      hosts((i) => ({ peerUrl: `ws://10.0.0.${i}:7101`, clientUrl: `ws://10.0.0.${i}:7001`, httpUrl: 'http://127.0.0.1:7301' })),
      'nodes[1].httpUrl',
      /port 7301 on 127\.0\.0\.1 is also used by nodes\[0\]\.httpUrl: each node must be reached at addresses of its own .*listenHttpUrl/,
    );
    // ... and accepted as the node's address to others, bound on loopback.
    assert.ok(validateConfig(hosts((i) => ({ peerUrl: `ws://10.0.0.${i}:7101`, clientUrl: `ws://10.0.0.${i}:7001`, httpUrl: `http://10.0.0.${i}:7301`, listenHttpUrl: 'http://127.0.0.1:7301' })), '/tmp'));
  });

  test('two nodes reached at one address are refused, whatever they bind', () => {
    refused(hosts((i) => ({ peerUrl: `ws://10.0.0.${i}:7101`, clientUrl: 'ws://10.0.0.9:7001', listenClientUrl: `ws://10.0.0.${i}:7001` })), 'nodes[1].clientUrl', /also used by nodes\[0\]\.clientUrl/);
  });

  test('nodes on this machine (loopback peers) may not bind one address, a wildcard included', () => {
    const local = (bind: (i: number) => string) => hosts((i) => ({ peerUrl: `ws://127.0.0.1:710${i}`, clientUrl: `ws://127.0.0.1:700${i}`, listenClientUrl: bind(i) }));
    refused(local(() => 'ws://127.0.0.1:7009'), 'nodes[1].listenClientUrl', /binds port 7009 on 127\.0\.0\.1, which nodes\[0\]\.listenClientUrl .* binds on the same machine/);
    refused(local((i) => (i === 2 ? 'ws://0.0.0.0:7001' : `ws://127.0.0.1:700${i}`)), 'nodes[1].listenClientUrl', /binds port 7001 on 0\.0\.0\.0, which nodes\[0\]\.listenClientUrl/);
    assert.ok(validateConfig(local((i) => `ws://127.0.0.1:701${i}`), '/tmp'));
  });

  test('one node may not bind two of its ports on one address', () => {
    refused({ ...base, nodes: [{ id: 'n1', dataDir: 'd', peerUrl: 'ws://10.0.0.1:7101', listenPeerUrl: 'ws://0.0.0.0:7101', clientUrl: 'ws://10.0.0.1:7001', listenClientUrl: 'ws://10.0.0.1:7101' }] }, 'nodes[0].listenClientUrl', /binds port 7101/);
  });

  test('a listen URL has its URL\'s scheme, and listenHttpUrl needs httpUrl', () => {
    refused({ ...base, nodes: [{ id: 'n1', dataDir: 'd', peerUrl: 'ws://127.0.0.1:7101', listenPeerUrl: 'wss://127.0.0.1:7102', clientUrl: 'ws://127.0.0.1:7001' }] }, 'nodes[0].listenPeerUrl', /must use the scheme of peerUrl \(ws:\/\/\)/);
    refused({ ...base, nodes: [{ id: 'n1', dataDir: 'd', peerUrl: 'ws://127.0.0.1:7101', clientUrl: 'ws://127.0.0.1:7001', listenHttpUrl: 'http://127.0.0.1:7301' }] }, 'nodes[0].listenHttpUrl', /needs httpUrl/);
    refused({ ...base, nodes: [{ id: 'n1', dataDir: 'd', peerUrl: 'ws://127.0.0.1:7101', clientUrl: 'ws://127.0.0.1:7001', listenClientUrl: 'ws://127.0.0.1' }] }, 'nodes[0].listenClientUrl', /needs an explicit port/);
  });
});

describe('exposure counts where a node binds and where it is reached', () => {
  const problems = (node: Record<string, string>) => {
    const c = validateConfig({ ...base, nodes: [{ id: 'n1', dataDir: 'd', ...node }] }, '/tmp');
    return exposureProblems(c, c.nodes[0]!);
  };

  test('loopback only: nothing to refuse', () => {
    assert.deepEqual(problems({ peerUrl: 'ws://127.0.0.1:7101', clientUrl: 'ws://127.0.0.1:7001' }), []);
  });

  test('reached on loopback but binding every interface: plain peer links are refused', () => {
    assert.match(problems({ peerUrl: 'ws://127.0.0.1:7101', listenPeerUrl: 'ws://0.0.0.0:7101', clientUrl: 'ws://127.0.0.1:7001' }).join('\n'), /peer links are plain ws:\/\/ on 0\.0\.0\.0/);
  });

  test('binding loopback but reached on the network (a port mapping): refused too', () => {
    assert.match(problems({ peerUrl: 'ws://10.0.0.1:7101', listenPeerUrl: 'ws://127.0.0.1:7101', clientUrl: 'ws://127.0.0.1:7001' }).join('\n'), /peer links are plain ws:\/\/ on 10\.0\.0\.1/);
  });
});

/** A port mapping: accepts on `from` and relays every connection to `to`, counting bytes. */
class Forwarder {
  bytes = 0;
  private readonly sockets = new Set<Socket>();
  private constructor(private readonly server: Server) {}
  static async open(from: number, to: number): Promise<Forwarder> {
    const server = createServer();
    const f = new Forwarder(server);
    server.on('connection', (down) => {
      const up = connect(to, '127.0.0.1');
      for (const s of [down, up]) {
        f.sockets.add(s);
        s.on('error', () => {
          down.destroy();
          up.destroy();
        });
        s.on('close', () => f.sockets.delete(s));
      }
      down.on('data', (d: Buffer) => (f.bytes += d.length));
      down.pipe(up);
      up.pipe(down);
    });
    await new Promise<void>((resolve) => server.listen(from, '127.0.0.1', resolve));
    return f;
  }
  close(): void {
    for (const s of this.sockets) s.destroy();
    this.server.close();
  }
}

describe('a cluster reached only through port mappings', { timeout: 90_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'palisade-addr-'));
  const forwarders: Forwarder[] = [];
  const procs: ChildProcess[] = [];
  after(async () => {
    await Promise.all(procs.map((p) => signalNode(p, 'SIGKILL')));
    for (const f of forwarders) f.close();
    if (!process.env.KEEP) rmSync(dir, { recursive: true, force: true });
  });

  test('binds its listen addresses, advertises the mapped ones, and serves through them', async () => {
    const ports = await freePorts(18);
    const nodes = [0, 1, 2].map((i) => {
      const [peer, client, http, listenPeer, listenClient, listenHttp] = ports.slice(6 * i, 6 * i + 6) as [number, number, number, number, number, number];
      return {
        id: `n${i + 1}`,
        peerUrl: `ws://127.0.0.1:${peer}`,
        clientUrl: `ws://127.0.0.1:${client}`,
        httpUrl: `http://127.0.0.1:${http}`,
        listenPeerUrl: `ws://127.0.0.1:${listenPeer}`,
        listenClientUrl: `ws://127.0.0.1:${listenClient}`,
        listenHttpUrl: `http://127.0.0.1:${listenHttp}`,
        dataDir: join(dir, `n${i + 1}`),
        map: [[peer, listenPeer], [client, listenClient], [http, listenHttp]] as const,
      };
    });
    for (const n of nodes) for (const [from, to] of n.map) forwarders.push(await Forwarder.open(from, to));
    const configPath = join(dir, 'cluster.config.json');
    writeFileSync(configPath, JSON.stringify({ ...base, raft: { profile: 'loopback' }, nodes: nodes.map(({ map: _map, ...n }) => n) }, null, 2));
    procs.push(...(await settleAll(nodes.map((n) => startNode({ id: n.id, configPath, logPath: join(dir, `${n.id}.log`), clientUrl: n.clientUrl })))));

    // The nodes dial each other only at the advertised (mapped) peer URLs.
    const leader = await until(
      async () => {
        const st = await Promise.all(nodes.map((n) => rpc(n.listenClientUrl, { op: 'status' }, 2_000).catch(() => null)));
        const l = st.find((s) => s?.role === 'leader');
        return l && st.every((s) => s?.leader === l.id) ? l.id : null;
      },
      30_000,
      'a leader agreed through the mapped peer ports',
    );
    // One link per pair of nodes, dialed by one side: at least two nodes' peer ports were dialed,
    // and only through their mappings (the bound ports are named nowhere but in their own entry).
    const peerForwarders = forwarders.filter((_, i) => i % 3 === 0);
    assert.ok(peerForwarders.filter((f) => f.bytes > 0).length >= 2, `Raft traffic through the mapped peer ports: ${peerForwarders.map((f) => f.bytes).join(', ')} bytes`);

    // Clients are told the advertised client URLs, never the bound ones.
    const members = await rpc(nodes[0]!.clientUrl, { op: 'members' }, 3_000);
    assert.deepEqual(members.map((m) => [m.id, m.peerUrl, m.clientUrl]).sort(), nodes.map((n) => [n.id, n.peerUrl, n.clientUrl]).sort());
    assert.ok(members.some((m) => m.id === leader));

    // Each status page binds its listen address and fetches its peers' pages at their httpUrl.
    const res = await fetch(new URL('/api/cluster', nodes[0]!.listenHttpUrl));
    const text = await res.text();
    assert.equal(res.status, 200, text);
    for (const n of nodes) assert.ok(text.includes(n.httpUrl), `${n.httpUrl} in ${text.slice(0, 300)}`);
  });
});
