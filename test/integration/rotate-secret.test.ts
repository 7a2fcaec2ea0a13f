// docs/operations.md, "Rotating the cluster secret", run as written against three real nodes
// while a client holds a lock and writes under its fence: `palisade secret add`, `use` and
// `remove` on the config, each followed by `systemctl reload` of every node in turn (the
// unit's ExecReload: SIGHUP) and `palisade status`. The cluster serves throughout, every
// node's links come back after each reload with no warning, the holder's lock is never lost,
// and at the end the old secret is refused by every node.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { TestCluster } from '../support/cluster.js';
import { dialAsPeer } from '../support/peer-dialer.js';
import { DocSteps, Holder, healthy, linksMade } from '../support/rotation.js';

const OLD = 'integration-test-secret-0123456789';

let c: TestCluster;
let steps: DocSteps;
let holder: Holder | undefined;

before(async () => {
  c = await TestCluster.started({ secret: OLD });
  steps = new DocSteps(c, { PALISADE_ENDPOINTS: c.endpoints.join(',') });
});
after(async () => {
  await holder?.close();
  await c?.stop();
  steps?.remove();
});

const fileSecrets = (): string[] => {
  const raw = JSON.parse(readFileSync(c.configPath, 'utf8')) as { secret?: string; secrets?: string[] };
  return [...(raw.secret !== undefined ? [raw.secret] : []), ...(raw.secrets ?? [])];
};

test('the cluster secret is rotated node by node, as documented, with a lock held throughout', async (t) => {
  holder = await Holder.start({ endpoints: c.endpoints }, 'rotation/held', 'rotation/written');

  await steps.run('secret-add');
  const [first, added] = fileSecrets();
  assert.equal(first, OLD, 'the old secret stays first');
  assert.ok(added && added.length >= 40 && added !== OLD, 'a new random secret, second');
  await steps.reloadEach(holder);

  await steps.run('secret-use');
  assert.deepEqual(fileSecrets(), [added, OLD]);
  const connects = await linksMade(c);
  await steps.reloadEach(holder);
  // n1 dials n2 and n3, n2 dials n3: each dialer made its links again with the new secret.
  const after2 = await linksMade(c);
  assert.ok(after2.n1! >= connects.n1! + 2 && after2.n2! >= connects.n2! + 1, `links made again: ${JSON.stringify({ connects, after2 })}`);

  await steps.run('secret-remove');
  assert.deepEqual(fileSecrets(), [added]);
  await steps.reloadEach(holder);
  await healthy(c);

  const { writes, slowestMs } = await holder.check();
  assert.ok(writes >= 9, `${writes} fenced writes along the rotation (one after each of 9 reloads at least)`);
  t.diagnostic(`${writes} fenced writes along the rotation, the slowest ${slowestMs} ms`);

  // A member still proving the old secret is refused everywhere now.
  for (const to of ['n2', 'n3']) {
    await assert.rejects(
      dialAsPeer(c.node(to).peerUrl, { clusterId: 'palisade-test', secret: OLD, from: 'n1', to }),
      /closed during the handshake: 4401 the handshake did not prove the cluster secret/,
      `${to} refuses the old secret`,
    );
  }
  for (const id of ['n1', 'n2', 'n3']) {
    const reloads = c.logOf(id).split('\n').filter((l) => l.includes('"msg":"config reloaded"'));
    assert.equal(reloads.length, 3, `${id} reloaded once a round`);
    assert.match(reloads.at(-1)!, /"secrets \(1\)"/, `${id} logged that it kept one secret`);
  }
});
