// What a node tells whoever asks, before and after they prove anything. A token that guesses
// session ids must not learn which exist (PERMISSION_DENIED for another token's session, and
// UNKNOWN_SESSION for none, told them); a dialler of the peer port that has not proven the
// secret must not learn the node's id; and a node whose own certificate its peers will
// refuse must say so itself, at start-up, instead of starting without a word.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import WebSocket from 'ws';
import { decodeFrame, encodeFrame } from '../../src/protocol/codec.js';
import { TestCluster } from '../support/cluster.js';
import { makePki, type CertFiles, type TestPki } from './certs.js';
import { WireClient } from '../support/wire-client.js';

const TOKENS = { alice: 'alice-token-0123456789abcdef', mallory: 'mallory-token-0123456789abcdef' };

describe('what a stranger learns', { timeout: 120_000 }, () => {
  let c: TestCluster;
  before(async () => {
    c = await TestCluster.started({
      extraConfig: { auth: { tokens: [{ name: 'alice', token: TOKENS.alice }, { name: 'mallory', token: TOKENS.mallory }] } },
      credentials: { token: TOKENS.alice },
    });
  });
  after(() => c?.stop());

  test('another token\'s session is answered exactly like one that does not exist', async () => {
    const alice = await WireClient.authenticated(c.endpoints[0]!, TOKENS.alice);
    const mallory = await WireClient.authenticated(c.endpoints[1]!, TOKENS.mallory);
    try {
      const live = await alice.openSession();
      const closed = await alice.openSession();
      assert.ok((await alice.sequenced(closed, { op: 'closeSession' })).ok);
      for (const body of [{ op: 'keepAlive' }, { op: 'attach' }, { op: 'closeSession', seq: 1 }, { op: 'put', seq: 1, key: 'k', value: new Uint8Array([1]) }]) {
        const answers = [];
        for (const session of [live, closed]) {
          const r = await mallory.call({ ...body, session });
          assert.ok(!r.ok);
          answers.push({ code: r.error.code, message: r.error.message.replace(String(session), 'ID') });
        }
        assert.deepEqual(answers[0], answers[1], `${body.op}: a live session of another token and a closed one are told apart`);
        assert.equal(answers[0]!.code, 'UNKNOWN_SESSION');
      }
      // Over HTTP too: the same status and body.
      const base = c.endpoints[2]!.replace(/^ws/, 'http');
      const bodies = await Promise.all(
        [live, closed].map(async (session) => {
          const res = await fetch(`${base}/v1/session/keepalive`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKENS.mallory}` }, body: JSON.stringify({ session }) });
          return { status: res.status, body: (await res.text()).replace(String(session), 'ID') };
        }),
      );
      assert.deepEqual(bodies[0], bodies[1]);
    } finally {
      alice.close();
      mallory.close();
    }
  });

  test('a peer-port dialler that has not proven the secret is not told the node\'s id', async () => {
    const target = c.node('n2');
    for (const auth of [
      { clusterId: 'palisade-test', from: 'n1', to: 'n7' }, // a wrong target: "this is n2" named it
      { clusterId: 'palisade-test', from: 'n9', to: 'n2' }, // an id that is no member
      { clusterId: 'palisade-test', from: 'n3', to: 'n2' }, // the higher id dialing the lower
    ]) {
      const reason = await new Promise<string>((resolve) => {
        const ws = new WebSocket(target.peerUrl);
        ws.on('error', () => {});
        ws.on('message', (data: Buffer) => {
          if ((decodeFrame(data) as { k?: string }).k !== 'hello') return;
          ws.send(encodeFrame({ k: 'auth', v: 2, ...auth, nonce: new Uint8Array(randomBytes(32)), mac: new Uint8Array(randomBytes(32)) }));
        });
        ws.on('close', (_code, why) => resolve(why.toString()));
      });
      assert.doesNotMatch(reason, /n2|this is/, `${JSON.stringify(auth)}: told "${reason}"`);
      assert.doesNotMatch(reason, /unknown node id|should not dial/, `${JSON.stringify(auth)}: told which ids are members ("${reason}")`);
    }
  });
});

describe('a node whose own certificate its peers would refuse', { timeout: 120_000 }, () => {
  let pki: TestPki;
  before(() => {
    pki = makePki();
  });
  after(() => pki?.remove());

  async function startWith(cert: CertFiles): Promise<string> {
    const c = await TestCluster.create({ nodes: 1, secure: { peer: true }, extraConfig: { tls: { peer: { cert: cert.cert, key: cert.key, ca: pki.ca } } } });
    try {
      await c.start('n1');
      return 'started';
    } catch (e) {
      return (e as Error).message;
    } finally {
      await c.stop();
    }
  }

  test('refuses to start, and says why', async () => {
    assert.match(await startWith(pki.issueExpired('n1')), /tls\.peer\.cert: expired on/);
    assert.match(await startWith(pki.issueNotYetValid('n1')), /tls\.peer\.cert: is not valid yet/);
    assert.match(await startWith(pki.issueRogue('n1')), /tls\.peer\.cert: is not signed by the CA/);
    assert.equal(await startWith(pki.issue('n1')), 'started', 'a good certificate starts');
  });
});
