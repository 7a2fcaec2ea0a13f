// SIGHUP on a real `palisade serve`: a file that cannot be used is refused and the node runs
// on as it was, saying so among its warnings until a reload succeeds; a file that changes
// what needs a restart is reloaded for the rest and says that too.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { TestCluster, until } from '../support/cluster.js';
import { reloadsLogged } from '../support/rotation.js';

let c: TestCluster;
let good: string;

before(async () => {
  c = await TestCluster.started({ nodes: 1 });
  good = readFileSync(c.configPath, 'utf8');
});
after(() => c?.stop());

async function warnings(): Promise<readonly string[]> {
  return (await c.status('n1'))?.warnings ?? [];
}

async function hup(): Promise<void> {
  const logged = c.logOf('n1').length;
  process.kill(c.pid('n1'), 'SIGHUP');
  // (The message of the outcome: a refusal's warning, logged later, says "config reload" too.)
  await until(() => /"msg":"config reload(ed|ed; nothing to change| refused; nothing changed)"/.test(c.logOf('n1').slice(logged)), 10_000, 'the reload to be logged');
}

test('a refused reload leaves the node as it was and warns until a reload succeeds', async () => {
  writeFileSync(c.configPath, good.replace('"secret"', '"secert"'));
  await hup();
  assert.ok(c.procs.has('n1'), 'the node runs on');
  assert.match(c.logOf('n1'), /"reason":"config: secert: unknown key; did you mean \\"secret\\"\?".*"msg":"config reload refused; nothing changed"/);
  const [w] = await warnings();
  assert.match(w ?? '', /^the config reload at .* was refused, and the node runs the config it had: config: secert: unknown key/);
  const reloads = reloadsLogged(c, 'n1');
  writeFileSync(c.configPath, good);
  await hup();
  assert.equal(reloadsLogged(c, 'n1'), reloads + 1);
  assert.deepEqual(await warnings(), []);
});

test('a file that changes what needs a restart is reloaded for the rest, and says what waits', async () => {
  const raw = JSON.parse(good) as { raft: { heartbeatMs: number }; secrets?: string[] };
  raw.raft.heartbeatMs = 60;
  raw.secrets = ['a-second-secret-0123456789'];
  writeFileSync(c.configPath, JSON.stringify(raw));
  await hup();
  assert.match(c.logOf('n1'), /"changed":\["secrets \(2\)"\].*"msg":"config reloaded"/);
  assert.deepEqual(await warnings(), ['the config file changes raft, which cannot change while the node runs: restart it to apply them']);
  writeFileSync(c.configPath, good);
  await hup();
  assert.deepEqual(await warnings(), []);
});
