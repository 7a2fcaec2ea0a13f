// A real cluster with everything on: tokens, wss on the client port, mutual TLS between
// peers, and tight limits. Clients are refused for what they may not do, each limit answers
// with its code, and the nodes keep serving throughout.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import type { Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { pino } from 'pino';
import { LockClient, PermissionDeniedError, UnauthenticatedError } from '../../src/client/index.js';
import { PeerTransport } from '../../src/transport/peer.js';
import { loadTlsMaterial } from '../../src/transport/tls.js';
import { CLI, TestCluster, sleep, until } from '../support/cluster.js';
import { makePki, type TestPki } from './certs.js';
import { WireClient } from '../support/wire-client.js';

const TOKENS = {
  full: 'full-access-token-0123456789',
  jobs: 'jobs-only-token-0123456789',
  reader: 'read-only-token-0123456789',
  ops: 'admin-token-0123456789abcdef',
};

const LIMITS = {
  maxFrameBytes: 16 * 1024,
  maxBufferedBytes: 1024 * 1024,
  maxSessionsPerConnection: 3,
  maxLocksPerSession: 3,
  maxWaitsPerSession: 2,
  maxWaitersPerLock: 2,
  maxNameBytes: 64,
  requestsPerSecond: 100,
  requestBurst: 300,
  maxConnectionsPerAddress: 40,
};

describe('a cluster with authentication, TLS and limits', () => {
  let pki: TestPki;
  let c: TestCluster;
  let ca: Buffer;
  let url: string;

  before(async () => {
    pki = makePki();
    for (const id of ['n1', 'n2', 'n3']) pki.issue(id);
    ca = pki.read(pki.ca);
    const certs = { cert: `${pki.dir}/{id}.crt`, key: `${pki.dir}/{id}.key`, ca: pki.ca };
    c = await TestCluster.create({
      secure: { peer: true, client: true },
      credentials: { token: TOKENS.full, ca },
      extraConfig: {
        auth: {
          tokens: [
            { name: 'full', token: TOKENS.full },
            { name: 'jobs', token: TOKENS.jobs, prefixes: ['jobs/'] },
            { name: 'reader', token: TOKENS.reader, readOnly: true },
            { name: 'ops', token: TOKENS.ops, admin: true },
          ],
        },
        tls: { peer: { ...certs, requireClientCert: true }, client: { ...certs, requireClientCert: false } },
        limits: LIMITS,
      },
    });
    await c.startAll();
    await c.waitForLeader();
    url = c.endpoints[0]!;
  });

  after(async () => {
    await c?.stop();
    pki?.remove();
  });

  const connect = (token?: string) => (token === undefined ? WireClient.connect(url, { ca }) : WireClient.authenticated(url, token, { ca }));

  async function stillServing(): Promise<void> {
    for (const n of c.nodes) {
      const s = await c.status(n.id);
      assert.ok(s, `node ${n.id} answers`);
    }
  }

  test('the nodes say at start-up that clients need tokens, and warn of nothing unencrypted', () => {
    for (const n of c.nodes) {
      const log = c.logOf(n.id);
      assert.match(log, /clients must present a token/);
      assert.doesNotMatch(log, /not authenticated|not encrypted/);
      for (const t of Object.values(TOKENS)) assert.ok(!log.includes(t), `a token is in ${n.id}'s log`);
    }
  });

  test('without a valid token, every op but hello is UNAUTHENTICATED', async () => {
    const anon = await connect();
    try {
      for (const body of [{ op: 'status' }, { op: 'openSession', ttlMs: 5000 }, { op: 'get', name: 'jobs/a' }, { op: 'members' }]) {
        const r = await anon.call(body);
        assert.ok(!r.ok && r.error.code === 'UNAUTHENTICATED', JSON.stringify(body));
      }
      for (const token of [undefined, 'not-a-token-of-this-cluster', TOKENS.full.slice(0, -1)]) {
        const r = await anon.call({ op: 'hello', version: 1, ...(token ? { token } : {}) });
        assert.ok(!r.ok && r.error.code === 'UNAUTHENTICATED');
      }
      assert.ok((await anon.call({ op: 'hello', version: 1, token: TOKENS.jobs })).ok);
      assert.ok((await anon.call({ op: 'status' })).ok);
    } finally {
      anon.close();
    }
    await until(() => /refused a client request/.test(c.logOf('n1')), 3000, 'the refusal in the log');
  });

  test('a token limited to prefixes, a read-only token and a non-admin token are refused what they may not do', async () => {
    const jobs = await connect(TOKENS.jobs);
    const reader = await connect(TOKENS.reader);
    try {
      const s = await jobs.openSession();
      assert.equal((await jobs.sequenced(s, { op: 'acquire', name: 'jobs/a', mode: 'exclusive', wait: false })).ok, true);
      const outside = await jobs.sequenced(s, { op: 'acquire', name: 'other/a', mode: 'exclusive', wait: false });
      assert.ok(!outside.ok && outside.error.code === 'PERMISSION_DENIED', JSON.stringify(outside));
      assert.match(outside.ok ? '' : outside.error.message, /jobs\//);
      for (const body of [{ op: 'get', name: 'other/a' }, { op: 'locks' }, { op: 'kvGet', key: 'other' }, { op: 'leader', election: 'other' }]) {
        const r = await jobs.call(body);
        assert.ok(!r.ok && r.error.code === 'PERMISSION_DENIED', JSON.stringify(body));
      }
      assert.ok((await jobs.call({ op: 'locks', prefix: 'jobs/' })).ok);
      const transfer = await jobs.call({ op: 'transferLeader' });
      assert.ok(!transfer.ok && transfer.error.code === 'PERMISSION_DENIED');

      const rs = await reader.openSession();
      const write = await reader.sequenced(rs, { op: 'acquire', name: 'jobs/b', mode: 'exclusive', wait: false });
      assert.ok(!write.ok && write.error.code === 'PERMISSION_DENIED' && /read-only/.test(write.error.message));
      const put = await reader.sequenced(rs, { op: 'put', key: 'k', value: new Uint8Array([1]) });
      assert.ok(!put.ok && put.error.code === 'PERMISSION_DENIED');
      const held = await reader.ok({ op: 'get', name: 'jobs/a' });
      assert.equal(held.holders[0].session, s, 'a read-only token reads everything');
    } finally {
      jobs.close();
      reader.close();
    }
  });

  test('another token\'s session cannot be used, whether it holds something or nothing', async () => {
    const full = await connect(TOKENS.full);
    const jobs = await connect(TOKENS.jobs);
    try {
      const holder = await full.openSession();
      const idle = await full.openSession();
      const g = await full.sequenced(holder, { op: 'acquire', name: 'other/evt', mode: 'exclusive', wait: false });
      assert.ok(g.ok);
      // Sessions belong to the token that opened them (docs/security.md): neither one can be
      // closed, kept alive or attached by the jobs token, which is told they are not open.
      for (const session of [holder, idle]) {
        for (const body of [{ op: 'attach', session }, { op: 'keepAlive', session }, { op: 'closeSession', session, seq: 99 }]) {
          const r = await jobs.call(body);
          assert.ok(!r.ok && r.error.code === 'UNKNOWN_SESSION', JSON.stringify(body));
          assert.doesNotMatch(r.error.message, /other\/evt/);
        }
      }
      assert.ok((await full.sequenced(holder, { op: 'release', name: 'other/evt', token: g.ok ? g.result.token : 0 })).ok);
      assert.deepEqual(jobs.events.filter((e) => 'name' in e && e.name === 'other/evt'), []);
    } finally {
      full.close();
      jobs.close();
    }
  });

  test('the SDK: a token and the CA connect; a wrong token is refused at once; a missing CA says why', async () => {
    const client = await LockClient.connect({ endpoints: c.endpoints, authToken: TOKENS.jobs, tls: { ca }, requestTimeoutMs: 5000 });
    try {
      const lock = await client.acquire('jobs/sdk');
      assert.ok(lock.token > 0);
      await assert.rejects(client.acquire('other/sdk'), PermissionDeniedError);
      await lock.release();
    } finally {
      await client.close();
    }
    const started = Date.now();
    await assert.rejects(
      LockClient.connect({ endpoints: c.endpoints, authToken: 'wrong-token-0123456789', tls: { ca }, requestTimeoutMs: 5000 }),
      (e: unknown) => e instanceof UnauthenticatedError && /refused the token/.test(e.message),
    );
    await assert.rejects(
      LockClient.connect({ endpoints: c.endpoints, tls: { ca }, requestTimeoutMs: 5000 }),
      (e: unknown) => e instanceof UnauthenticatedError && /requires a token and none was given/.test(e.message),
    );
    assert.ok(Date.now() - started < 4000, 'a refused token is not retried until the deadline');
    await assert.rejects(LockClient.connect({ endpoints: c.endpoints, authToken: TOKENS.jobs, requestTimeoutMs: 1500 }), /certificate/i);
  });

  describe('the CLI', () => {
    function palisade(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; out: string; err: string }> {
      const p = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, PALISADE_TOKEN: '', PALISADE_CA: '', ...env } });
      let out = '';
      let err = '';
      p.stdout.on('data', (d: Buffer) => (out += d.toString()));
      p.stderr.on('data', (d: Buffer) => (err += d.toString()));
      const timer = setTimeout(() => p.kill('SIGKILL'), 20_000);
      return new Promise((resolve) =>
        p.on('close', (code) => {
          clearTimeout(timer);
          resolve({ code, out, err });
        }),
      );
    }
    const endpoints = () => ['--endpoints', c.endpoints.join(',')];

    test('--token and --ca, or PALISADE_TOKEN and PALISADE_CA', async () => {
      const [viaFlags, viaEnv, lock] = await Promise.all([
        palisade(['get', 'jobs/cli', ...endpoints(), '--token', TOKENS.jobs, '--ca', pki.ca]),
        palisade(['status', ...endpoints(), '--json'], { PALISADE_TOKEN: TOKENS.reader, PALISADE_CA: pki.ca }),
        palisade(['lock', 'jobs/cli-lock', ...endpoints(), '--', process.execPath, '-e', 'process.exit(Number(process.env.PALISADE_FENCING_TOKEN) > 0 ? 0 : 3)'], {
          PALISADE_TOKEN: TOKENS.jobs,
          PALISADE_CA: pki.ca,
        }),
      ]);
      assert.equal(viaFlags.code, 0, viaFlags.err);
      assert.match(viaFlags.out, /jobs\/cli: free/);
      assert.equal(viaEnv.code, 0, viaEnv.err);
      assert.equal((JSON.parse(viaEnv.out) as { nodes: { role: string }[] }).nodes.filter((r) => r.role === 'leader').length, 1);
      assert.equal(lock.code, 0, lock.err);
    });

    test('refusals in plain words', async () => {
      const [badToken, noToken, outside, noCa, missingCa] = await Promise.all([
        palisade(['get', 'jobs/cli', ...endpoints(), '--token', 'wrong-token-0123456789', '--ca', pki.ca]),
        palisade(['status', ...endpoints(), '--ca', pki.ca]),
        palisade(['lock', 'other/cli', ...endpoints(), '--', 'true'], { PALISADE_TOKEN: TOKENS.jobs, PALISADE_CA: pki.ca }),
        // Retried on every node until the SDK's deadline: a bad certificate may be one node's.
        palisade(['get', 'jobs/cli', ...endpoints(), '--token', TOKENS.jobs]),
        palisade(['get', 'jobs/cli', ...endpoints(), '--ca', '/nonexistent/ca.pem']),
      ]);
      assert.notEqual(badToken.code, 0);
      assert.match(badToken.err, /the cluster refused the token: UNAUTHENTICATED .*check --token or PALISADE_TOKEN/);
      assert.match(noToken.err, /the cluster requires a token: UNAUTHENTICATED — give --token or set PALISADE_TOKEN/);
      assert.notEqual(outside.code, 0);
      assert.match(outside.err, /PERMISSION_DENIED/);
      assert.notEqual(noCa.code, 0);
      assert.match(noCa.err, /TLS certificate .*check --ca or PALISADE_CA/);
      assert.match(missingCa.err, /cannot read the CA certificate \/nonexistent\/ca\.pem/);
    });
  });

  describe('limits', () => {
    test('sessions per connection', async () => {
      const w = await connect(TOKENS.full);
      try {
        for (let i = 0; i < LIMITS.maxSessionsPerConnection; i++) await w.openSession();
        const r = await w.call({ op: 'openSession', ttlMs: 5000 });
        assert.ok(!r.ok && r.error.code === 'LIMIT_EXCEEDED' && /maxSessionsPerConnection/.test(r.error.message));
      } finally {
        w.close();
      }
    });

    test('locks held and waited for per session, waiters per lock, name length', async () => {
      const w = await connect(TOKENS.full);
      const others = await connect(TOKENS.full);
      try {
        const s = await w.openSession();
        for (let i = 0; i < LIMITS.maxLocksPerSession; i++) {
          assert.ok((await w.sequenced(s, { op: 'acquire', name: `lim/held/${i}`, mode: 'exclusive', wait: false })).ok);
        }
        const over = await w.sequenced(s, { op: 'acquire', name: 'lim/held/x', mode: 'exclusive', wait: false });
        assert.ok(!over.ok && over.error.code === 'LIMIT_EXCEEDED' && /maxLocksPerSession/.test(over.error.message));

        // s holds lim/held/0..2: other sessions queue behind them.
        const a = await others.openSession();
        const b = await others.openSession();
        for (let i = 0; i < LIMITS.maxWaitsPerSession; i++) {
          const q = await others.sequenced(a, { op: 'acquire', name: `lim/held/${i}`, mode: 'exclusive', wait: true });
          assert.ok(q.ok && q.result.status === 'queued');
        }
        const tooManyWaits = await others.sequenced(a, { op: 'acquire', name: 'lim/held/2', mode: 'exclusive', wait: true });
        assert.ok(!tooManyWaits.ok && /maxWaitsPerSession/.test(tooManyWaits.error.message));
        assert.ok((await others.sequenced(b, { op: 'acquire', name: 'lim/held/0', mode: 'exclusive', wait: true })).ok);
        const third = await others.openSession();
        const tooManyWaiters = await others.sequenced(third, { op: 'acquire', name: 'lim/held/0', mode: 'exclusive', wait: true });
        assert.ok(!tooManyWaiters.ok && /maxWaitersPerLock/.test(tooManyWaiters.error.message));

        const long = await w.call({ op: 'get', name: 'n'.repeat(LIMITS.maxNameBytes + 1) });
        assert.ok(!long.ok && long.error.code === 'INVALID_ARGUMENT' && /maxNameBytes/.test(long.error.message));
      } finally {
        w.close();
        others.close();
      }
    });

    test('requests per second per connection: RATE_LIMITED, and the node goes on', async () => {
      const w = await connect(TOKENS.full);
      try {
        const replies = await Promise.all(Array.from({ length: 1000 }, () => w.fire({ op: 'status' })));
        const limited = replies.filter((r) => !r.ok && r.error.code === 'RATE_LIMITED').length;
        const codes = new Map<string, number>();
        for (const r of replies) codes.set(r.ok ? 'ok' : r.error.code, (codes.get(r.ok ? 'ok' : r.error.code) ?? 0) + 1);
        assert.ok(limited >= 300, `only ${limited} RATE_LIMITED: ${JSON.stringify([...codes])}`);
        assert.ok(replies.filter((r) => r.ok).length >= LIMITS.requestBurst);
        await sleep(1100); // the bucket refills
        assert.ok((await w.call({ op: 'status' })).ok);
      } finally {
        w.close();
      }
      await stillServing();
    });

    test('connections per client address: the next one is closed with 1013 and logged', async () => {
      const conns = await Promise.all(Array.from({ length: LIMITS.maxConnectionsPerAddress + 5 }, () => WireClient.connect(url, { ca })));
      try {
        await sleep(300);
        const refused = conns.filter((w) => w.closeCode !== null);
        assert.ok(refused.length >= 5, `${refused.length} refused`);
        for (const w of refused) {
          assert.equal(w.closeCode, 1013);
          assert.match(w.closeReason, /TOO_MANY_CONNECTIONS/);
        }
      } finally {
        for (const w of conns) w.close();
      }
      await until(() => /too many client connections from one address/.test(c.logOf('n1')), 3000, 'the log line');
      await sleep(200);
      await stillServing();
    });

    test('an oversize frame: FRAME_TOO_LARGE, then close 1009', async () => {
      const w = await connect(TOKENS.full);
      const r = await w.call({ op: 'kvGet', key: 'x'.repeat(LIMITS.maxFrameBytes + 10) });
      assert.ok(!r.ok && r.error.code === 'FRAME_TOO_LARGE');
      assert.equal(await w.whenClosed(), 1009);
    });

    test('a client that does not read its responses is disconnected', async () => {
      const writer = await connect(TOKENS.full);
      const s = await writer.openSession();
      for (let i = 0; i < 8; i++) assert.ok((await writer.sequenced(s, { op: 'put', key: `big/${i}`, value: new Uint8Array(15 * 1024) })).ok);
      writer.close();
      const reader = await connect(TOKENS.full);
      const socket = (reader.ws as unknown as { _socket: Socket })._socket;
      socket.pause();
      // Each answer carries 120 KiB: far more than the socket buffers and the node's bound.
      for (let i = 0; i < 250; i++) void reader.fire({ op: 'watch', prefix: 'big/' });
      await until(() => /client does not read its responses/.test(c.logOf('n1')), 15_000, 'the slow reader to be cut');
      socket.resume();
      await reader.whenClosed();
      await stillServing();
    });
  });

  describe('peers', () => {
    async function impostor(opts: { secret?: string; clusterId?: string }): Promise<boolean> {
      // A node with a valid certificate from the cluster CA, so that only the handshake decides.
      pki.issue('impostor');
      const tls = loadTlsMaterial({ cert: `${pki.dir}/impostor.crt`, key: `${pki.dir}/impostor.key`, ca: pki.ca, requireClientCert: true }, 'impostor');
      let up = false;
      const t = new PeerTransport({
        clusterId: opts.clusterId ?? 'palisade-test',
        selfId: 'n1',
        secrets: [opts.secret ?? 'integration-test-secret-0123456789'],
        listenHost: '127.0.0.1',
        listenPort: 0,
        peers: new Map([['n3', c.node('n3').peerUrl]]),
        logger: pino({ level: 'silent' }),
        tls,
      });
      t.on('peerUp', () => (up = true));
      await t.start();
      t.send('n3', [{ type: 'vote', from: 'n1', to: 'n3', term: 1_000_000, index: 1_000_000, logTerm: 1_000_000 }]);
      await sleep(800);
      await t.stop();
      return up;
    }

    test('a node with the wrong secret or the wrong cluster id is refused and logged, even over TLS with a good certificate', async () => {
      assert.equal(await impostor({ secret: 'not-the-cluster-secret-at-all' }), false);
      assert.equal(await impostor({ clusterId: 'another-cluster' }), false);
      const log = c.logOf('n3');
      assert.match(log, /refused inbound peer link.*wrong secret|wrong secret.*refused inbound peer link/);
      assert.match(log, /wrong cluster id \\"another-cluster\\"/);
      const s = await c.status('n3');
      assert.ok(s && s.term < 1_000_000);
    });

    test('a peer without a certificate from the cluster CA is refused at TLS and logged', async () => {
      const rogue = pki.issueRogue('n1');
      const tls = loadTlsMaterial({ ...rogue, ca: pki.ca, requireClientCert: true }, 'rogue');
      let up = false;
      const t = new PeerTransport({
        clusterId: 'palisade-test',
        selfId: 'n1',
        secrets: ['integration-test-secret-0123456789'],
        listenHost: '127.0.0.1',
        listenPort: 0,
        peers: new Map([['n2', c.node('n2').peerUrl]]),
        logger: pino({ level: 'silent' }),
        tls,
      });
      t.on('peerUp', () => (up = true));
      await t.start();
      try {
        await until(() => /refused a TLS connection on the peer port/.test(c.logOf('n2')), 10_000, 'the TLS refusal in the log');
      } finally {
        await t.stop();
      }
      assert.equal(up, false, 'a rogue certificate knowing the secret got a link');
      await stillServing();
    });
  });
});
