// What a config reload changes while a node runs (config-reload.ts): the secrets, the tokens
// and the certificate files, all or nothing; everything else of this node is reported as
// waiting for a restart, and a refused reload stays among the node's warnings until a later
// one succeeds.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { validateConfig, type ClusterConfig } from '../../src/config/cluster-config.js';
import { ConfigReloads, reloadedConfig, restartOnlyChanges } from '../../src/server/config-reload.js';
import { systemClock } from '../../src/server/clock.js';
import { captureLogger } from '../transport/helpers.js';

const node = (i: number, port = 7000 + i) => ({ id: `n${i}`, peerUrl: `wss://127.0.0.1:${port + 100}`, clientUrl: `wss://127.0.0.1:${port}`, dataDir: `d${i}` });
const tls = (requireClientCert: boolean, cert = 'certs/{id}.crt') => ({ cert, key: 'certs/{id}.key', ca: 'certs/ca.crt', requireClientCert });

function config(change: (raw: Record<string, unknown>) => void = () => {}): ClusterConfig {
  const raw: Record<string, unknown> = {
    clusterId: 'c',
    secret: 'first-secret-0123456789',
    nodes: [node(1), node(2), node(3)],
    sessions: { minTtlMs: 1000 },
    tls: { peer: tls(true), client: tls(false) },
    auth: { tokens: [{ name: 'ops', token: 'ops-token-0123456789abc', admin: true }] },
  };
  change(raw);
  return validateConfig(raw, '/etc/palisade');
}

describe('restartOnlyChanges', () => {
  test('the secrets, tokens and certificate files reload; another node\'s entry is not this node\'s business', () => {
    const next = config((r) => {
      r.secrets = ['second-secret-0123456789'];
      r.auth = { tokens: [{ name: 'ops', token: 'ops-token-second-0123456789', admin: true }] };
      r.tls = { peer: tls(true, 'new/{id}.crt'), client: tls(false, 'new/{id}.crt') };
      r.nodes = [node(1), node(2, 7500), node(3)];
    });
    assert.deepEqual(restartOnlyChanges(config(), next, 'n1'), []);
  });

  test('this node\'s entry, the timing, limits, auth or TLS on or off and requireClientCert wait for a restart', () => {
    const next = config((r) => {
      r.nodes = [node(1, 7600), node(2), node(3)];
      r.raft = { heartbeatMs: 60 };
      r.limits = { maxFrameBytes: 65536 };
      delete r.auth;
      r.tls = { peer: tls(false), client: tls(false) };
    });
    assert.deepEqual(restartOnlyChanges(config(), next, 'n1'), ["nodes (n1's entry)", 'raft', 'limits', 'auth (turned off)', 'tls.peer.requireClientCert']);
  });
});

describe('reloadedConfig', () => {
  test('takes what reloads from the file and keeps the rest as the node runs it', () => {
    const running = config();
    const next = config((r) => {
      r.secrets = ['second-secret-0123456789'];
      r.raft = { heartbeatMs: 60 };
      r.tls = { peer: tls(false, 'new/{id}.crt'), client: tls(false) };
      delete r.auth;
    });
    const got = reloadedConfig(running, next);
    assert.deepEqual(got.secrets, ['first-secret-0123456789', 'second-secret-0123456789']);
    assert.deepEqual(got.raft, running.raft);
    assert.equal(got.tls.peer?.cert, '/etc/palisade/new/{id}.crt', 'new paths');
    assert.equal(got.tls.peer?.requireClientCert, true, 'requireClientCert as it runs');
    assert.deepEqual(got.auth, running.auth, 'auth stays on');
  });
});

describe('ConfigReloads', () => {
  function setUp(apply: (next: ClusterConfig) => string[]) {
    let running = config();
    const { logger, lines } = captureLogger();
    const reloads = new ConfigReloads(
      {
        id: 'n1',
        running: () => running,
        apply: (next) => {
          const changed = apply(next);
          running = next;
          return changed;
        },
      },
      logger,
      systemClock,
    );
    return { reloads, lines, running: () => running };
  }

  test('a refused reload changes nothing and stays a warning until one succeeds', () => {
    let fail = true;
    const { reloads, lines, running } = setUp(() => {
      if (fail) throw new Error('config: tls.peer: the certificate expired on Jan  1 00:00:00 2020 GMT');
      return ['peer certificates'];
    });
    const before = running();
    assert.equal(reloads.reload(() => config((r) => (r.secrets = ['second-secret-0123456789']))), false);
    assert.equal(running(), before);
    assert.equal(reloads.reloads, 0);
    assert.match(reloads.notes()[0]!, /^the config reload at .* was refused, and the node runs the config it had: config: tls.peer: the certificate expired/);
    assert.ok(lines.some((l) => l.msg === 'config reload refused; nothing changed'));
    assert.equal(reloads.reload(() => { throw new Error('config: (file): x.json is not valid JSON'); }), false);
    assert.match(reloads.notes()[0]!, /not valid JSON/);
    fail = false;
    assert.equal(reloads.reload(() => config()), true);
    assert.deepEqual(reloads.notes(), []);
    assert.equal(reloads.reloads, 1);
    assert.ok(lines.some((l) => l.msg === 'config reloaded' && JSON.stringify(l.changed) === '["peer certificates"]'));
  });

  test('a file that changes what needs a restart is reloaded for the rest and says so until it no longer does', () => {
    const { reloads, running } = setUp(() => ['secrets (2)']);
    assert.equal(reloads.reload(() => config((r) => ((r.raft = { heartbeatMs: 60 }), (r.secrets = ['second-secret-0123456789'])))), true);
    assert.deepEqual(running().secrets.length, 2);
    assert.deepEqual(reloads.notes(), ['the config file changes raft, which cannot change while the node runs: restart it to apply them']);
    assert.equal(reloads.reload(() => config()), true);
    assert.deepEqual(reloads.notes(), []);
  });

  test('a file without this node is refused', () => {
    const { reloads } = setUp(() => []);
    assert.equal(reloads.reload(() => config((r) => (r.nodes = [node(2), node(3)]))), false);
    assert.match(reloads.notes()[0]!, /no node "n1" in the config/);
  });
});
