// Defaults live in one module (src/config/defaults.ts) and satisfy the config's own rules
// (issue 18, finding 11): a config with only clusterId, secret and nodes validates and a
// real node starts from it; the lock machine, the server and the SDK agree on lock-delay,
// TTL bounds and the session TTL.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { DEFAULT_TTL_MS } from '../../src/client/client.js';
import { LockClient } from '../../src/client/index.js';
import { DEFAULT_MACHINE_CONFIG, LockMachine, checkMachineConfig } from '../../src/lockfsm/index.js';
import { ConfigError, validateConfig } from '../../src/config/cluster-config.js';
import { DEFAULT_SESSION_TTL_MS, machineConfigFrom } from '../../src/config/defaults.js';
import { freePorts, signalNode, startNode } from '../support/node-process.js';

const MINIMAL = {
  clusterId: 'minimal',
  secret: 'a-secret-of-this-test-0123456789',
  nodes: [{ id: 'n1', peerUrl: 'ws://127.0.0.1:7101', clientUrl: 'ws://127.0.0.1:7001', dataDir: 'd1' }],
};

describe('defaults', () => {
  test('a config with only clusterId, secret and nodes is valid, and its machine config too', () => {
    const c = validateConfig(MINIMAL, '/tmp');
    assert.ok(c.sessions.minTtlMs >= 2 * c.raft.electionTimeoutMs, 'the validator\'s own rule');
    assert.ok(c.sessions.minTtlMs <= c.sessions.defaultTtlMs && c.sessions.defaultTtlMs <= c.sessions.maxTtlMs);
    const m = machineConfigFrom(c);
    assert.equal(checkMachineConfig(m), m);
    assert.doesNotThrow(() => new LockMachine(m));
  });

  test('the lock machine, the server and the SDK agree', () => {
    const c = validateConfig(MINIMAL, '/tmp');
    assert.equal(c.sessions.lockDelayMs, DEFAULT_MACHINE_CONFIG.defaultLockDelayMs, 'lock-delay');
    assert.equal(c.sessions.minTtlMs, DEFAULT_MACHINE_CONFIG.minTtlMs, 'minimum TTL');
    assert.equal(c.sessions.maxTtlMs, DEFAULT_MACHINE_CONFIG.maxTtlMs, 'maximum TTL');
    assert.equal(c.sessions.maxSessions, DEFAULT_MACHINE_CONFIG.maxSessions, 'session cap');
    assert.equal(c.sessions.maxSessionsPerToken, DEFAULT_MACHINE_CONFIG.maxSessionsPerOwner, 'session cap per token');
    assert.equal(c.limits.maxNameBytes, DEFAULT_MACHINE_CONFIG.maxNameLength, 'name length');
    assert.equal(DEFAULT_TTL_MS, DEFAULT_SESSION_TTL_MS, 'the SDK\'s TTL is the node\'s default TTL');
    assert.equal(c.sessions.defaultTtlMs, DEFAULT_TTL_MS);
    assert.ok(DEFAULT_TTL_MS >= c.sessions.minTtlMs && DEFAULT_TTL_MS <= c.sessions.maxTtlMs, 'the SDK\'s TTL is accepted');
  });

  test('defaults that depend on another setting follow it', () => {
    const c = validateConfig({ ...MINIMAL, raft: { electionTimeoutMs: 2_000 } }, '/tmp');
    assert.equal(c.sessions.minTtlMs, 4_000);
    assert.equal(c.sessions.defaultTtlMs, DEFAULT_TTL_MS);
    const slow = validateConfig({ ...MINIMAL, raft: { heartbeatMs: 1_000, electionTimeoutMs: 10_000 } }, '/tmp');
    assert.equal(slow.sessions.minTtlMs, 20_000);
    assert.equal(slow.sessions.defaultTtlMs, 20_000, 'raised to the minimum');
    assert.doesNotThrow(() => new LockMachine(machineConfigFrom(slow)));
  });

  test('a lock-delay the lock machine would refuse is a config error, not a crash at start-up', () => {
    assert.throws(() => validateConfig({ ...MINIMAL, sessions: { lockDelayMs: 3_600_000 } }, '/tmp'), (e: unknown) => e instanceof ConfigError && e.field === 'sessions.lockDelayMs');
  });

  describe('a real node from the minimal config', () => {
    const dir = mkdtempSync(join(tmpdir(), 'palisade-minimal-'));
    after(() => rmSync(dir, { recursive: true, force: true }));

    test('starts, elects itself and serves a lock', async () => {
      const [peer, client] = await freePorts(2);
      const clientUrl = `ws://127.0.0.1:${client}`;
      const configPath = join(dir, 'cluster.config.json');
      writeFileSync(configPath, JSON.stringify({ ...MINIMAL, nodes: [{ id: 'n1', peerUrl: `ws://127.0.0.1:${peer}`, clientUrl, dataDir: 'n1' }] }));
      const p = await startNode({ id: 'n1', configPath, logPath: join(dir, 'n1.log'), clientUrl });
      try {
        const client = await LockClient.connect({ endpoints: [clientUrl], requestTimeoutMs: 10_000 });
        try {
          const lock = await client.acquire('minimal');
          assert.ok(lock.token > 0);
          await lock.release();
        } finally {
          await client.close();
        }
      } finally {
        await signalNode(p, 'SIGTERM');
      }
    });
  });
});
