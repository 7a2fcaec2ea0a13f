// Tokens and secrets in the config, and tokens replaced on a running gate (a config reload):
// two tokens of one name are one identity with the same rights; a removed token's open
// connections are closed and answered UNAUTHENTICATED; a kept token's connections take its
// new rights; the cluster secrets are `secret` then `secrets`, all different.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError, validateConfig, type AuthConfig, type ClusterConfig } from '../../src/config/cluster-config.js';
import { ClientGate } from '../../src/server/api/client-gate.js';
import type { MachineView } from '../../src/server/api/limits.js';
import type { Request } from '../../src/protocol/client-protocol.js';
import { captureLogger } from '../transport/helpers.js';

const OLD = 'app-token-old-0123456789';
const NEW = 'app-token-new-0123456789';
const OTHER = 'retired-token-0123456789';

function config(extra: Record<string, unknown>): ClusterConfig {
  const raw = {
    clusterId: 'c',
    secret: 'a-cluster-secret-0123456789',
    nodes: [{ id: 'n1', peerUrl: 'ws://127.0.0.1:7101', clientUrl: 'ws://127.0.0.1:7001', dataDir: 'd1' }],
    sessions: { minTtlMs: 1000 },
    ...extra,
  };
  // Through JSON, as a file: a key given as undefined is left out.
  return validateConfig(JSON.parse(JSON.stringify(raw)), '/tmp');
}

const auth = (tokens: Record<string, unknown>[]): AuthConfig => config({ auth: { tokens } }).auth!;
const noMachine: MachineView = { appliedIndex: 0, sessionOwner: () => undefined, session: () => null, lock: () => null };
const hello = (token: string): Request => ({ id: 1, op: 'hello', version: 1, token });
const put = (key: string): Request => ({ id: 2, op: 'put', key, value: new Uint8Array([1]) }) as Request;

describe('the config', () => {
  test('secrets are secret then secrets, the first proved; at least one, at most four, all different', () => {
    assert.deepEqual(config({}).secrets, ['a-cluster-secret-0123456789']);
    assert.deepEqual(config({ secrets: ['second-secret-0123456789'] }).secrets, ['a-cluster-secret-0123456789', 'second-secret-0123456789']);
    const only = config({ secret: undefined, secrets: ['x-secret-0123456789ab', 'y-secret-0123456789ab'] });
    assert.deepEqual(only.secrets, ['x-secret-0123456789ab', 'y-secret-0123456789ab']);
    const refused = (extra: Record<string, unknown>, field: string, text: RegExp): void =>
      assert.throws(() => config(extra), (e: unknown) => e instanceof ConfigError && e.field === field && text.test(e.message) && !e.message.includes('0123456789'));
    refused({ secret: undefined }, 'secret', /is missing/);
    refused({ secrets: ['a-cluster-secret-0123456789'] }, 'secrets[0]', /same as another secret/);
    refused({ secrets: ['s1-secret-0123456789', 's2-secret-0123456789', 's3-secret-0123456789', 's4-secret-0123456789'] }, 'secrets', /at most 4/);
    refused({ secrets: ['short'] }, 'secrets[0]', /at least 16/);
  });

  test('two tokens may share a name only with the same rights', () => {
    const a = auth([{ name: 'app', token: OLD, prefixes: ['a/', 'b/'] }, { name: 'app', token: NEW, prefixes: ['b/', 'a/'] }]);
    assert.equal(a.tokens.length, 2);
    for (const other of [{ prefixes: ['a/'] }, { readOnly: true, prefixes: ['a/', 'b/'] }, {}]) {
      assert.throws(
        () => auth([{ name: 'app', token: OLD, prefixes: ['a/', 'b/'] }, { name: 'app', token: NEW, ...other }]),
        (e: unknown) => e instanceof ConfigError && e.field === 'auth.tokens[1]' && /second token of "app".*same prefixes, readOnly and admin/.test(e.message),
      );
    }
  });
});

describe('tokens replaced on a running gate', () => {
  function setUp() {
    const { logger } = captureLogger();
    const gate = new ClientGate(config({ auth: { tokens: [{ name: 'app', token: OLD, prefixes: ['app/'] }, { name: 'retired', token: OTHER }] } }), logger, () => noMachine);
    const closed: string[] = [];
    const open = (name: string, token: string) => {
      const g = gate.open({ id: closed.length, remoteAddress: '127.0.0.1' }, (why) => closed.push(`${name}: ${why}`));
      assert.equal(g.admit(hello(token)), null);
      return g;
    };
    return { gate, closed, open };
  }

  test('a second token of a name, then the first removed: the first token\'s connections close, the second\'s stay, one identity throughout', () => {
    const { gate, closed, open } = setUp();
    const oldConn = open('old', OLD);
    assert.equal(oldConn.owner, 'app');
    gate.setTokens(auth([{ name: 'app', token: OLD, prefixes: ['app/'] }, { name: 'app', token: NEW, prefixes: ['app/'] }, { name: 'retired', token: OTHER }]));
    assert.deepEqual(closed, [], 'adding a token closes nothing');
    const newConn = open('new', NEW);
    assert.equal(newConn.owner, 'app', 'the new token opens and uses the same sessions');
    gate.setTokens(auth([{ name: 'app', token: NEW, prefixes: ['app/'] }, { name: 'retired', token: OTHER }]));
    assert.deepEqual(closed, ['old: UNAUTHENTICATED: the token of this connection was removed from the cluster config']);
    assert.equal(oldConn.admit(put('app/x'))?.code, 'UNAUTHENTICATED');
    assert.match(oldConn.admit(put('app/x'))!.message, /removed from the cluster config/);
    assert.equal(oldConn.owner, null);
    assert.equal(newConn.admit(put('app/x')), null);
    assert.equal(gate.open({ id: 9, remoteAddress: '127.0.0.1' }).admit(hello(OLD))?.code, 'UNAUTHENTICATED', 'a new connection with the old token is refused');
  });

  test('a kept token takes its new rights on open connections; a removed name\'s connections close and hear no events', () => {
    const { gate, closed, open } = setUp();
    const app = open('app', OLD);
    const retired = open('retired', OTHER);
    assert.equal(app.admit(put('other/x'))?.code, 'PERMISSION_DENIED');
    const event = { event: 'kvChanged', key: 'other/x', revision: 1, value: null } as const;
    assert.equal(retired.showsEvent(event as never), true);
    gate.setTokens(auth([{ name: 'app', token: OLD, prefixes: ['app/', 'other/'] }]));
    assert.equal(app.admit(put('other/x')), null, 'the widened prefixes apply at once');
    assert.deepEqual(closed, ['retired: UNAUTHENTICATED: the token of this connection was removed from the cluster config']);
    assert.equal(retired.showsEvent(event as never), false);
    assert.equal(retired.admit(put('x'))?.code, 'UNAUTHENTICATED');
  });

  test('a connection closed before the reload is forgotten, and an unchanged reload changes nothing', () => {
    const { gate, closed, open } = setUp();
    const retired = open('retired', OTHER);
    gate.forget(retired);
    const same = auth([{ name: 'app', token: OLD, prefixes: ['app/'] }, { name: 'retired', token: OTHER }]);
    assert.deepEqual(gate.setTokens(same), []);
    gate.setTokens(auth([{ name: 'app', token: OLD, prefixes: ['app/'] }]));
    assert.deepEqual(closed, []);
    assert.throws(() => gate.setTokens(null), /cannot be turned on or off/);
  });
});
