// `palisade secret ...` and `palisade token ...` on a config file: each edit is checked as
// `palisade serve` checks a file (one that a node would refuse is not written), keeps the
// file's mode, and refuses what makes no sense at that point of a rotation.
import assert from 'node:assert/strict';
import { chmodSync, copyFileSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { secretAdd, secretRemove, secretUse, tokenAdd, tokenRemove, tokenRetire } from '../../src/cli/credential-files.js';
import { ConfigError, loadConfig } from '../../src/config/cluster-config.js';
import { UsageError } from '../../src/cli/exit-codes.js';
import { ROOT } from '../support/node-process.js';

const dir = mkdtempSync(join(tmpdir(), 'palisade-credential-files-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** The shipped development config, with an admin token, private to its group (0640). */
function fresh(name: string): string {
  const path = join(dir, `${name}.json`);
  copyFileSync(join(ROOT, 'config.schema.json'), join(dir, 'config.schema.json'));
  const raw = JSON.parse(readFileSync(join(ROOT, 'cluster.config.json'), 'utf8')) as Record<string, unknown>;
  writeFileSync(path, JSON.stringify({ ...raw, auth: { tokens: [{ name: 'ops', token: 'ops-token-0123456789abcdef', admin: true }] } }));
  chmodSync(path, 0o640);
  return path;
}

test('a secret added, used and removed; the file stays valid, keeps its mode, and never holds a repeated secret', async () => {
  const config = fresh('secrets');
  const [old] = loadConfig(config).secrets;
  await secretAdd({ config });
  const [, added] = loadConfig(config).secrets;
  assert.equal(loadConfig(config).secrets[0], old);
  assert.equal(Buffer.from(added!, 'base64').length, 32, '32 random bytes');
  assert.equal(statSync(config).mode & 0o777, 0o640);
  await assert.rejects(secretAdd({ config, from: writeValue('dup', old!) }), UsageError);
  await secretUse({ config });
  assert.deepEqual(loadConfig(config).secrets, [added, old]);
  await secretRemove({ config });
  assert.deepEqual(loadConfig(config).secrets, [added]);
  assert.equal((JSON.parse(readFileSync(config, 'utf8')) as { secret: string }).secret, added, 'one secret is written as "secret"');
  await assert.rejects(secretUse({ config }), /holds one secret: add the new one first/);
  await assert.rejects(secretRemove({ config }), /nothing to remove/);
});

test('an edit that a node would refuse is not written', async () => {
  const config = fresh('refused');
  const before = readFileSync(config, 'utf8');
  await assert.rejects(secretAdd({ config, from: writeValue('short', 'too-short') }), (e: unknown) => e instanceof ConfigError && e.field === 'secrets[1]');
  await assert.rejects(tokenAdd('app', { config, from: writeValue('short-token', 'short') }), (e: unknown) => e instanceof ConfigError && e.field === 'auth.tokens[1].token');
  assert.equal(readFileSync(config, 'utf8'), before);
});

test('tokens: a second token of a name takes its rights; retire keeps the newest; remove takes the name, not the last token', async () => {
  const config = fresh('tokens');
  const first = await tokenAdd('app', { config, prefixes: 'app/,shared/', readOnly: true });
  const second = await tokenAdd('app', { config });
  assert.notEqual(first.token, second.token);
  assert.deepEqual(
    loadConfig(config).auth!.tokens.filter((t) => t.name === 'app').map((t) => ({ token: t.token, prefixes: t.prefixes, readOnly: t.readOnly })),
    [first.token, second.token].map((token) => ({ token, prefixes: ['app/', 'shared/'], readOnly: true })),
  );
  await assert.rejects(tokenAdd('app', { config, admin: true }), /its new token gets the same rights/);
  await tokenRetire('app', { config });
  assert.deepEqual(loadConfig(config).auth!.tokens.filter((t) => t.name === 'app').map((t) => t.token), [second.token]);
  await assert.rejects(tokenRetire('app', { config }), /no older token to retire/);
  await tokenRemove('app', { config });
  assert.deepEqual(loadConfig(config).auth!.tokens.map((t) => t.name), ['ops']);
  await assert.rejects(tokenRemove('ops', { config }), /only tokens: authentication needs at least one/);
  await assert.rejects(tokenRemove('nobody', { config }), /no token "nobody"/);
});

function writeValue(name: string, value: string): string {
  const path = join(dir, name);
  writeFileSync(path, `${value}\n`);
  return path;
}
