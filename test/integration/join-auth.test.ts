// `palisade serve --join` on a cluster with auth on: the joining node's `members` and
// `addMember` requests carry a token (the first admin token of the config it shares with
// the cluster, or --token / $PALISADE_TOKEN), so a 4th node joins a 3-node cluster that
// refuses unauthenticated clients, and becomes a voter. Real processes, real LevelDB.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { rpc } from '../../src/protocol/rpc.js';
import { join } from 'node:path';
import { TestCluster, until } from '../support/cluster.js';
import { startNode } from '../support/node-process.js';
import { makePki, type TestPki } from '../security/certs.js';

const ADMIN = 'join-auth-admin-token-0123456789';
const APP = 'join-auth-app-token-0123456789ab';

describe('joining a cluster with auth on', { timeout: 90_000 }, () => {
  let c: TestCluster;
  before(async () => {
    c = await TestCluster.started({
      // The app token comes first: the join must pick the admin one, not merely the first.
      extraConfig: { auth: { tokens: [{ name: 'app', token: APP }, { name: 'ops', token: ADMIN, admin: true }] } },
      credentials: { token: APP },
    });
  });
  after(async () => {
    await c?.stop();
  });

  test('a 4th node joins with --join alone and becomes a voter; unauthenticated addMember is still refused', async () => {
    await assert.rejects(
      rpc(c.node('n1').clientUrl, { op: 'addMember', member: 'intruder', peerUrl: 'ws://127.0.0.1:1', clientUrl: 'ws://127.0.0.1:2' }, 3_000),
      /UNAUTHENTICATED|token/,
    );
    await c.addNodeSpec('n4');
    await c.start('n4', { join: c.endpoints.slice(0, 3) });
    await until(
      async () => {
        const ms = await rpc(c.node('n1').clientUrl, { op: 'members' }, 3_000, { token: APP });
        return ms.find((m) => m.id === 'n4')?.voter === true;
      },
      30_000,
      'n4 a voter',
    );
    assert.match(c.logOf('n4'), /asked the cluster to add this node as a learner/);
  });

  test('a join with a token that is not admin stops at once and says why', async () => {
    const n5 = await c.addNodeSpec('n5');
    const t0 = Date.now();
    await assert.rejects(
      startNode({
        id: 'n5',
        configPath: join(c.dir, 'n5.config.json'),
        logPath: join(c.dir, 'n5.log'),
        clientUrl: n5.clientUrl,
        args: ['--join', c.endpoints.slice(0, 3).join(','), '--token', APP],
        startTimeoutMs: 15_000,
      }),
      /exited at start-up[\s\S]*refused to add this node \(PERMISSION_DENIED/,
    );
    assert.ok(Date.now() - t0 < 10_000, `the refused join took ${Date.now() - t0} ms to stop (it retried)`);
  });
});

describe('joining a cluster with auth, wss:// and required client certificates', { timeout: 90_000 }, () => {
  let pki: TestPki;
  let c: TestCluster;
  before(async () => {
    pki = makePki();
    for (const id of ['n1', 'n2', 'n3', 'n4', 'harness']) pki.issue(id);
    const certs = { cert: `${pki.dir}/{id}.crt`, key: `${pki.dir}/{id}.key`, ca: pki.ca };
    c = await TestCluster.create({
      secure: { peer: true, client: true },
      credentials: { token: APP, ca: pki.read(pki.ca), cert: pki.read(`${pki.dir}/harness.crt`), key: pki.read(`${pki.dir}/harness.key`) },
      extraConfig: {
        auth: { tokens: [{ name: 'app', token: APP }, { name: 'ops', token: ADMIN, admin: true }] },
        tls: { peer: { ...certs, requireClientCert: true }, client: { ...certs, requireClientCert: true } },
      },
    });
    await c.startAll();
    await c.waitForLeader();
  });
  after(async () => {
    await c?.stop();
    pki?.remove();
  });

  test('the join trusts tls.client.ca and presents its own certificate and the admin token, all from the config', async () => {
    await c.addNodeSpec('n4');
    await c.start('n4', { join: c.endpoints.slice(0, 3) });
    await until(
      async () => {
        const ms = await rpc(c.node('n1').clientUrl, { op: 'members' }, 3_000, c.credentials);
        return ms.find((m) => m.id === 'n4')?.voter === true;
      },
      30_000,
      'n4 a voter',
    );
  });
});
