// The typos that used to start a node with a setting silently at its default, through the real
// `palisade serve`: each must stop start-up with a non-zero exit, before the node binds a port,
// and a message naming the field's path and the key it stands for. Several of them were
// security settings: a token with "prefix" or "Prefixes" could touch every name, "readonly"
// left a token writable, "auht" turned authentication off, "requireClientCerts" left mutual
// TLS off.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { runPalisade } from '../support/cli-process.js';
import { freePorts } from '../support/node-process.js';

const TOKEN = 'typo-test-token-0123456789';

interface Case {
  readonly name: string;
  /** Changes a valid config into one with the typo. */
  readonly edit: (c: Record<string, any>) => void;
  readonly says: string;
}

const CASES: readonly Case[] = [
  { name: 'a token\'s "prefix"', edit: (c) => (c.auth.tokens[0].prefix = ['jobs/']), says: 'config: auth.tokens[0].prefix: unknown key; did you mean "prefixes"?' },
  { name: 'a token\'s "Prefixes"', edit: (c) => (c.auth.tokens[0].Prefixes = ['jobs/']), says: 'config: auth.tokens[0].Prefixes: unknown key; did you mean "prefixes"?' },
  { name: 'a token\'s "readonly"', edit: (c) => (c.auth.tokens[0].readonly = true), says: 'config: auth.tokens[0].readonly: unknown key; did you mean "readOnly"?' },
  {
    name: '"auht"',
    edit: (c) => {
      c.auht = c.auth;
      delete c.auth;
    },
    says: 'config: auht: unknown key; did you mean "auth"?',
  },
  { name: 'tls.peer "requireClientCerts"', edit: (c) => (c.tls.peer.requireClientCerts = true), says: 'config: tls.peer.requireClientCerts: unknown key; did you mean "requireClientCert"?' },
  { name: '"sesions"', edit: (c) => (c.sesions = { minTtlMs: 2000 }), says: 'config: sesions: unknown key; did you mean "sessions"?' },
  { name: 'raft "electionTimeout"', edit: (c) => (c.raft.electionTimeout = 1000), says: 'config: raft.electionTimeout: unknown key; did you mean "electionTimeoutMs"?' },
  {
    name: 'a node\'s "httpURL"',
    edit: (c) => {
      c.nodes[0].httpURL = c.nodes[0].httpUrl;
      delete c.nodes[0].httpUrl;
    },
    says: 'config: nodes[0].httpURL: unknown key; did you mean "httpUrl"?',
  },
  { name: '"limts"', edit: (c) => (c.limts = { maxFrameBytes: 65536 }), says: 'config: limts: unknown key; did you mean "limits"?' },
];

/** A node that starts despite the typo runs until killed: the test then fails on its exit. */
const serve = (configPath: string) => runPalisade(['serve', '--config', configPath, '--id', 'n1', '--allow-insecure']);

describe('palisade serve refuses a misspelt key at start', () => {
  const dir = mkdtempSync(join(tmpdir(), 'palisade-typos-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  async function validConfig(): Promise<Record<string, any>> {
    const [peer, client, http] = await freePorts(3);
    return {
      clusterId: 'typos',
      secret: 'typo-test-secret-0123456789',
      nodes: [{ id: 'n1', peerUrl: `ws://127.0.0.1:${peer}`, clientUrl: `ws://127.0.0.1:${client}`, httpUrl: `http://127.0.0.1:${http}`, dataDir: join(dir, 'n1') }],
      raft: { profile: 'loopback' },
      auth: { tokens: [{ name: 'jobs', token: TOKEN, prefixes: ['jobs/'] }] },
      // Not read before the config is refused: the certificate files need not exist.
      tls: { peer: { cert: 'missing.crt', key: 'missing.key', ca: 'missing-ca.crt' } },
      limits: { maxFrameBytes: 65536 },
    };
  }

  test('the unchanged config is accepted (it fails later, on the missing certificate files)', async () => {
    const c = await validConfig();
    c.nodes[0].peerUrl = c.nodes[0].peerUrl.replace('ws:', 'wss:');
    const path = join(dir, 'valid.json');
    writeFileSync(path, JSON.stringify(c));
    const r = await serve(path);
    assert.notEqual(r.code, 0);
    assert.match(r.err, /config: tls\.peer\.cert: cannot read .*missing\.crt/);
  });

  for (const [i, k] of CASES.entries()) {
    test(`${k.name}: exits non-zero, naming the path and the key it stands for`, async () => {
      const c = await validConfig();
      c.nodes[0].peerUrl = c.nodes[0].peerUrl.replace('ws:', 'wss:');
      k.edit(c);
      const path = join(dir, `typo-${i}.json`);
      writeFileSync(path, JSON.stringify(c, null, 2));
      const r = await serve(path);
      assert.equal(r.code, 1, `exit status; stderr: ${r.err}`);
      assert.ok(r.err.includes(k.says), r.err);
      assert.doesNotMatch(r.out + r.err, /node started|cannot read/, 'refused before anything else was done');
    });
  }
});
