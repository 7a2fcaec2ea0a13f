// docs/operations.md, "Rotating client tokens", run as written against three real nodes with
// auth on. `batch` holds a lock throughout and writes under its fence, reading its token
// from a file at each connection (the SDK's authToken as a function): `palisade token add
// batch`, reload every node, the new token given to the client, `palisade token retire
// batch`, reload every node. The connection still on the old token is closed as its node
// reloads, the client reconnects with the new one and keeps its session, lock and token; the
// old token is refused everywhere. Then `reports`, holding a lock another client waits for,
// is revoked (`palisade token remove reports`, reload every node): it is refused everywhere,
// its session is left to expire, and the waiter is granted with a higher token.
import assert from 'node:assert/strict';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { LockClient, type Lock } from '../../src/client/index.js';
import { rpc } from '../../src/protocol/rpc.js';
import { TestCluster, until } from '../support/cluster.js';
import { DocSteps, Holder, healthy } from '../support/rotation.js';

const OPS = 'ops-token-0123456789abcdef';
const BATCH = 'batch-token-first-0123456789';
const REPORTS = 'reports-token-0123456789ab';

let c: TestCluster;
let steps: DocSteps;
let holder: Holder | undefined;
const clients: LockClient[] = [];

before(async () => {
  c = await TestCluster.started({
    extraConfig: {
      auth: {
        tokens: [
          { name: 'ops', token: OPS, admin: true },
          { name: 'batch', token: BATCH, prefixes: ['batch/'] },
          { name: 'reports', token: REPORTS, prefixes: ['reports/'] },
        ],
      },
    },
    credentials: { token: OPS },
  });
  steps = new DocSteps(c, { PALISADE_ENDPOINTS: c.endpoints.join(','), PALISADE_TOKEN: OPS });
});
after(async () => {
  await holder?.close();
  await Promise.all(clients.map((x) => x.close().catch(() => {})));
  await c?.stop();
  steps?.remove();
});

/** What each node answers a status request made with `token`: 'ok' or the error code. */
async function answers(token: string): Promise<string[]> {
  return Promise.all(c.nodes.map((n) => rpc(n.clientUrl, { op: 'status' }, 2_000, { token }).then(() => 'ok', (e: { code?: string }) => e.code ?? 'error')));
}

const tokensOf = (name: string): string[] =>
  (JSON.parse(readFileSync(c.configPath, 'utf8')) as { auth: { tokens: { name: string; token: string }[] } }).auth.tokens.filter((t) => t.name === name).map((t) => t.token);

const closedOnReload = (): number =>
  c.nodes.reduce((sum, n) => sum + [...c.logOf(n.id).matchAll(/"connectionsClosed":(\d+)/g)].reduce((s, m) => s + Number(m[1]), 0), 0);

test('a client\'s token is rotated and another client\'s revoked, node by node, as documented, with a lock held throughout', async (t) => {
  const tokenFile = join(steps.work, 'batch-client.token');
  writeFileSync(tokenFile, `${BATCH}\n`);
  holder = await Holder.start({ endpoints: c.endpoints, authToken: () => readFileSync(tokenFile, 'utf8').trim() }, 'batch/held', 'batch/written');

  // reports holds a lock that ops waits for.
  const reports = await LockClient.connect({ endpoints: c.endpoints, authToken: REPORTS, ttlMs: 2_000 });
  const waiter = await LockClient.connect({ endpoints: c.endpoints, authToken: OPS });
  clients.push(reports, waiter);
  const revoked = await reports.acquire('reports/daily', { lockDelayMs: 300 });
  let waiterLock: Lock | null = null;
  const waiting = waiter.acquire('reports/daily', { waitMs: 120_000 }).then((l) => (waiterLock = l));

  // 1. A second token of batch; both work once every node is reloaded.
  await steps.run('token-add');
  const fresh = readFileSync(join(steps.work, 'batch.token'), 'utf8').trim();
  assert.deepEqual(tokensOf('batch'), [BATCH, fresh], 'the printed token is the second of batch');
  await steps.reloadEach(holder);
  assert.deepEqual(await answers(fresh), ['ok', 'ok', 'ok']);
  assert.deepEqual(await answers(BATCH), ['ok', 'ok', 'ok']);

  // 2. The application is given the new token (it reads the file when it connects).
  copyFileSync(join(steps.work, 'batch.token'), tokenFile);

  // 3. The old token retired: the holder's connection, on it until now, is closed by its node.
  const closedBefore = closedOnReload();
  await steps.run('token-retire');
  assert.deepEqual(tokensOf('batch'), [fresh]);
  await steps.reloadEach(holder);
  assert.ok(closedOnReload() > closedBefore, 'the holder\'s connection on the old token was closed');
  assert.deepEqual(await answers(BATCH), ['UNAUTHENTICATED', 'UNAUTHENTICATED', 'UNAUTHENTICATED']);
  assert.equal(waiterLock, null, 'reports still holds its lock: its token is still good');

  // Revoking reports: refused everywhere, its session left to expire, the waiter granted.
  await steps.run('token-remove');
  assert.deepEqual(tokensOf('reports'), []);
  await steps.reloadEach(holder);
  assert.deepEqual(await answers(REPORTS), ['UNAUTHENTICATED', 'UNAUTHENTICATED', 'UNAUTHENTICATED']);
  await waiting;
  assert.ok(waiterLock!.token > revoked.token, `the waiter's token ${waiterLock!.token} is above the revoked holder's ${revoked.token}`);
  await until(() => revoked.signal.aborted, 5_000, 'the revoked client to learn it lost its lease');
  const expired = await until(async () => {
    const text = await (await fetch(`${c.node('n1').httpUrl}/metrics`)).text();
    return /palisade_lock_releases_total\{[^}]*reason="expire"[^}]*\} [1-9]/.test(text);
  }, 5_000, 'the revoked lock to be freed by the expiry of its session');
  assert.ok(expired);
  await healthy(c);

  const { writes, slowestMs } = await holder.check();
  assert.ok(writes >= 9, `${writes} fenced writes along the rotation (one after each of 9 reloads at least)`);
  t.diagnostic(`${writes} fenced writes along the rotation, the slowest ${slowestMs} ms`);
});
