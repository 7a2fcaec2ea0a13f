// config.schema.json is the config's one description, and the validator holds to it both ways:
// every key docs/configuration.md lists is accepted and has an effect (no key is read but
// ignored), and a misspelling of any key, at any depth, is refused with its path and the key
// it stands for (a typo must never leave a setting at its default). The reference table in
// the docs is the one rendered from the schema, the schema's defaults are the validator's, and
// every config the repository ships names the schema in "$schema" and passes it.
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { describe, test } from 'node:test';
import { ConfigError, validateConfig, type ClusterConfig } from '../../src/config/cluster-config.js';
import { DEFAULT_SESSIONS, MACHINE_MAX_NAME_BYTES, RAFT_PROFILES } from '../../src/config/defaults.js';
import { referencedKeys, renderReference } from '../../src/config/reference.js';
import { CONFIG_SCHEMA, SCHEMA_URL, closestKey, resolveRef, schemaAt, schemaKeyPaths, type SchemaNode } from '../../src/config/schema.js';
import { ROOT } from '../support/node-process.js';

const DOC = readFileSync(join(ROOT, 'docs/configuration.md'), 'utf8');
const documented = referencedKeys(DOC);
type Json = Record<string, unknown>;

/** A config holding every key the schema names, each at its first example. */
function fullConfig(): Json {
  const build = (node: SchemaNode): unknown => {
    const n = resolveRef(node);
    if (n.type === 'object') return Object.fromEntries(Object.entries(n.properties ?? {}).map(([k, v]) => [k, build(v)]));
    if (n.type === 'array' && n.items && resolveRef(n.items).type === 'object') return [build(n.items)];
    assert.ok(n.examples?.length, `every key has an example: ${JSON.stringify(n.description)}`);
    return structuredClone(n.examples[0]);
  };
  const c = build(CONFIG_SCHEMA) as Json & { auth: { tokens: Json[] } };
  // One token cannot be both read-only and admin: the admin flag goes on a second token.
  const [token] = c.auth.tokens;
  c.auth.tokens = [{ ...token, admin: false }, { name: 'ops', token: 'ops-token-0123456789abcdef', admin: true }];
  return c;
}

/** The concrete places of a key path in a config ("auth.tokens[].name" -> auth.tokens[0].name). */
function concrete(path: string): (string | number)[] {
  return path.split('.').flatMap((part) => (part.endsWith('[]') ? [part.slice(0, -2), 0] : [part]));
}

function parentOf(config: Json, path: string): { holder: Record<string | number, unknown>; key: string | number } {
  const steps = concrete(path);
  let holder = config as Record<string | number, unknown>;
  for (const s of steps.slice(0, -1)) holder = holder[s] as Record<string | number, unknown>;
  return { holder, key: steps.at(-1)! };
}

/** The path an error names for a key path: the first item of each array. */
const fieldOf = (path: string): string => path.replaceAll('[]', '[0]');
const parse = (c: unknown): ClusterConfig => validateConfig(c, '/etc/palisade');
const isLeaf = (path: string): boolean => {
  const n = schemaAt(path);
  return n.type !== 'object' && !(n.type === 'array' && n.items && resolveRef(n.items).type === 'object');
};
const isRequired = (path: string): boolean => {
  const i = path.lastIndexOf('.');
  const parent = i < 0 ? resolveRef(CONFIG_SCHEMA) : schemaAt(path.slice(0, i));
  return (parent.required ?? []).includes(path.slice(i + 1));
};

describe('the reference in docs/configuration.md', () => {
  test('is the table rendered from config.schema.json (npm run docs:config)', () => {
    assert.ok(DOC.includes(renderReference()), 'docs/configuration.md is out of date: run npm run docs:config');
  });

  test('lists every key of the schema, and only those', () => {
    assert.deepEqual(documented, schemaKeyPaths());
    assert.ok(documented.length > 50, `${documented.length} keys`);
    for (const key of ['auth.tokens[].prefixes', 'tls.peer.requireClientCert', 'nodes[].listenHttpUrl', 'raft.profile', 'ledger.abandonedAfterMs']) assert.ok(documented.includes(key), key);
  });
});

describe('every documented key', () => {
  const full = fullConfig();

  test('is accepted, all of them in one config', () => {
    const c = parse(full);
    assert.equal(c.auth?.tokens.length, 2);
    assert.equal(c.nodes[0]!.listenPeerUrl, 'wss://0.0.0.0:7101');
  });

  // A key the validator accepted but never read would lie: removing it (or, for a required
  // key, refusing its absence) must change what the node runs with. A key is checked without
  // the keys that override it, need it or exclude it.
  const setAside: Record<string, readonly string[]> = {
    'raft.profile': ['raft.tickMs', 'raft.heartbeatMs', 'raft.electionTimeoutMs'],
    'nodes[].httpUrl': ['nodes[].listenHttpUrl'],
    'tls.peer.ca': ['tls.peer.requireClientCert'],
    'tls.client.ca': ['tls.client.requireClientCert'],
    'auth.tokens[].readOnly': ['auth.tokens[].admin'],
    'auth.tokens[].admin': ['auth.tokens[].readOnly'],
  };
  const noEffect = new Set(['$schema']); // read by editors only (its meaning in the reference says so)
  for (const path of documented.filter(isLeaf)) {
    test(`${path} takes effect`, () => {
      if (noEffect.has(path)) return;
      const withKey = structuredClone(full);
      for (const other of setAside[path] ?? []) {
        const { holder, key } = parentOf(withKey, other);
        delete holder[key];
      }
      const without = structuredClone(withKey);
      const { holder, key } = parentOf(without, path);
      delete holder[key];
      if (isRequired(path)) {
        assert.throws(() => parse(without), (e: unknown) => e instanceof ConfigError && e.field === fieldOf(path) && /is missing/.test(e.message));
        return;
      }
      // Some example may equal the default the key's absence gives (a profile the addresses
      // imply): one of the examples must make a difference.
      const examples = schemaAt(path).examples ?? [];
      const differs = examples.some((example) => {
        const variant = structuredClone(withKey);
        const at = parentOf(variant, path);
        at.holder[at.key] = structuredClone(example);
        return !isDeepStrictEqual(parse(variant), parse(without));
      });
      assert.ok(differs, `${path}: no example changes the parsed config`);
    });
  }
});

function isDeepStrictEqual(a: unknown, b: unknown): boolean {
  try {
    assert.deepStrictEqual(a, b);
    return true;
  } catch {
    return false;
  }
}

/** Misspellings of a key that are no key of its own object: other case, one letter dropped,
 *  two letters swapped. */
function misspellings(key: string, siblings: readonly string[]): string[] {
  const swapAt = Math.max(1, Math.floor(key.length / 2)) - 1;
  const variants = [
    key === key.toLowerCase() ? key[0]!.toUpperCase() + key.slice(1) : key.toLowerCase(),
    key.slice(0, -1),
    key.slice(0, swapAt) + key[swapAt + 1] + key[swapAt] + key.slice(swapAt + 2),
    `${key}s`,
  ];
  return [...new Set(variants)].filter((v) => v !== key && v.length > 0 && !siblings.includes(v));
}

describe('a misspelling of each key', () => {
  const full = fullConfig();
  for (const path of documented) {
    const { key } = parentOf(structuredClone(full), path);
    const i = path.lastIndexOf('.');
    const parent = i < 0 ? resolveRef(CONFIG_SCHEMA) : schemaAt(path.slice(0, i));
    const siblings = Object.keys(parent.properties ?? {});
    for (const wrong of misspellings(String(key), siblings)) {
      test(`${path} as "${wrong}" is refused, naming the path and "${String(key)}"`, () => {
        const c = structuredClone(full);
        const at = parentOf(c, path);
        at.holder[wrong] = at.holder[at.key];
        delete at.holder[at.key];
        const field = i < 0 ? wrong : `${fieldOf(path.slice(0, i))}.${wrong}`;
        assert.throws(
          () => parse(c),
          (e: unknown) => e instanceof ConfigError && e.field === field && e.message.includes(`did you mean "${String(key)}"?`),
        );
      });
    }
  }

  test('a key in the wrong section is pointed to its own', () => {
    const c = { ...fullConfig(), heartbeatMs: 100 };
    assert.throws(() => parse(c), /config: heartbeatMs: unknown key here; "heartbeatMs" belongs in raft \(raft\.heartbeatMs\)/);
    const l = fullConfig() as { limits: Json };
    l.limits['maxSessions'] = 10;
    assert.throws(() => parse(l), /config: limits\.maxSessions: .*sessions\.maxSessions/);
  });

  test('a key like none is refused with the keys known there', () => {
    const c = fullConfig() as { raft: Json };
    c.raft['zzz'] = 1;
    assert.throws(() => parse(c), /config: raft\.zzz: unknown key \(known here: profile, tickMs, heartbeatMs, electionTimeoutMs\)/);
  });

  test('the suggestion is the nearest key, and nothing when none is near', () => {
    assert.equal(closestKey('auht', ['auth', 'tls']), 'auth');
    assert.equal(closestKey('PREFIXES', ['prefixes', 'readOnly']), 'prefixes');
    assert.equal(closestKey('electionTimeout', ['tickMs', 'heartbeatMs', 'electionTimeoutMs']), 'electionTimeoutMs');
    assert.equal(closestKey('colour', ['cert', 'key', 'ca']), undefined);
  });
});

describe('the schema and the validator agree', () => {
  test('on every default the schema states', () => {
    const c = parse(fullConfig());
    const minimal = { clusterId: 'c', secret: '0123456789abcdef', nodes: [{ id: 'n1', peerUrl: 'wss://10.0.0.1:7101', clientUrl: 'wss://10.0.0.1:7001', dataDir: 'd' }], tls: { peer: { cert: 'a', key: 'b' }, client: { cert: 'a', key: 'b' } }, auth: { tokens: [{ name: 'a', token: '0123456789abcdef' }] } };
    const m = parse(minimal) as unknown as Json;
    let checked = 0;
    for (const path of documented) {
      const d = schemaAt(path).default;
      if (d === undefined) continue;
      let v: unknown = m;
      for (const s of concrete(path)) v = (v as Record<string | number, unknown>)[s];
      assert.deepEqual(v, d, path);
      checked++;
    }
    assert.ok(checked >= 15, `${checked} defaults`);
    assert.ok(c);
  });

  test('on the bounds that come from the lock machine and the profiles', () => {
    assert.equal(schemaAt('sessions.lockDelayMs').maximum, DEFAULT_SESSIONS.maxLockDelayMs);
    assert.equal(schemaAt('limits.maxNameBytes').maximum, MACHINE_MAX_NAME_BYTES);
    const profile = schemaAt('raft.profile');
    assert.deepEqual([...profile.enum!].sort(), Object.keys(RAFT_PROFILES).sort());
    for (const [name, t] of Object.entries(RAFT_PROFILES)) {
      const said = new RegExp(`\`${name}\` \\(tick ${t.tickMs} ms, heartbeat ${t.heartbeatMs} ms, election ${t.electionTimeoutMs.toLocaleString('en-US')} ms\\)`);
      assert.match(profile.description!, said);
    }
  });

  test('profiles: loopback for nodes on loopback, lan for hosts, each time overridable', () => {
    const node = (host: string, i: number) => ({ id: `n${i}`, peerUrl: `ws://${host}:710${i}`, clientUrl: `ws://${host}:700${i}`, dataDir: `d${i}` });
    const base = { clusterId: 'c', secret: '0123456789abcdef' };
    assert.deepEqual(parse({ ...base, nodes: [node('127.0.0.1', 1), node('localhost', 2)] }).raft, RAFT_PROFILES.loopback);
    assert.deepEqual(parse({ ...base, nodes: [node('127.0.0.1', 1), node('10.0.0.2', 2)] }).raft, RAFT_PROFILES.lan);
    assert.deepEqual(parse({ ...base, nodes: [node('10.0.0.1', 1)], raft: { profile: 'loopback', heartbeatMs: 70 } }).raft, { ...RAFT_PROFILES.loopback, heartbeatMs: 70 });
    assert.equal(parse({ ...base, nodes: [node('10.0.0.1', 1)] }).sessions.minTtlMs, 2 * RAFT_PROFILES.lan.electionTimeoutMs);
  });
});

describe('configs the repository ships', () => {
  const configs = [join(ROOT, 'cluster.config.json'), ...readdirSync(join(ROOT, 'deploy')).filter((f) => f.endsWith('.json')).map((f) => join(ROOT, 'deploy', f))];

  test('there is the npm start config and at least one deployment config', () => {
    assert.ok(configs.length >= 2, configs.join(', '));
  });

  for (const path of configs) {
    test(`${path.slice(ROOT.length + 1)} names config.schema.json in $schema and passes it`, () => {
      const text = readFileSync(path, 'utf8');
      const raw = JSON.parse(text) as Json;
      assert.equal(typeof raw['$schema'], 'string');
      assert.equal(resolve(dirname(path), raw['$schema'] as string), SCHEMA_URL.pathname);
      // A deployment config holds placeholders for its secrets (@SECRET@), filled in by the
      // guide's commands: left in, each is refused, never a usable published secret.
      const placeholders = [...new Set(text.match(/@[A-Z_]+@/g) ?? [])];
      if (placeholders.length > 0) assert.throws(() => validateConfig(raw, dirname(path)), /must be (at least 16|16 to \d+) characters/);
      const filled = placeholders.reduce((t, p, i) => t.replaceAll(p, `filled-in-value-${i}-0123456789abcdef`), text);
      assert.ok(validateConfig(JSON.parse(filled), dirname(path)));
    });
  }

  test('docs/ hold no config of their own: a JSON block with "clusterId" names the schema and passes it', () => {
    for (const name of readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md'))) {
      const text = readFileSync(join(ROOT, 'docs', name), 'utf8');
      for (const [, block] of text.matchAll(/```json\n([\s\S]*?)```/g)) {
        if (!block!.includes('"clusterId"')) continue;
        let raw: Json;
        try {
          raw = JSON.parse(block!) as Json;
        } catch {
          // An outline with "…" in it, not a config: it must still name the schema.
          assert.match(block!, /"\$schema"/, `${name}: ${block}`);
          continue;
        }
        assert.ok(validateConfig(raw, '/etc/palisade'), name);
      }
    }
  });
});
