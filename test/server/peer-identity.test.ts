// Storage identities travel once per link; a node that drops a verified-required peer's
// messages asks again, so a lost identity frame cannot keep a peer out for the life of a link.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pino from 'pino';
import { PeerIdentityGate, type IdentityApp } from '../../src/server/replication/peer-identity.js';

function gate(known: [string, string][]) {
  const sent: [string, IdentityApp][] = [];
  let now = 0;
  const g = new PeerIdentityGate({
    selfId: 'n1',
    storageId: 'id-n1',
    store: { peerStorageIds: async () => new Map(known), recordPeerStorageId: async () => {}, forgetPeerStorageId: async () => {} },
    send: (peer, p) => (sent.push([peer, p]), true),
    logger: pino({ level: 'silent' }),
    refused: () => assert.fail('not refused'),
    now: () => now,
  });
  return { g, sent, advance: (ms: number) => (now += ms) };
}

test('a known peer whose id did not arrive on this link is asked again, at most once a second', async () => {
  const { g, sent, advance } = gate([['n2', 'id-n2']]);
  await g.load();
  g.onPeerUp('n2');
  sent.length = 0; // the id frame of peerUp: lost
  assert.equal(g.admits('n2'), false);
  g.dropped('n2');
  assert.deepEqual(sent, [['n2', { t: 'storage', id: 'id-n1' }], ['n2', { t: 'storageAsk' }]]);
  g.dropped('n2');
  assert.equal(sent.length, 2, 'not again within a second');
  advance(1_000);
  g.dropped('n2');
  assert.equal(sent.length, 4);
  g.onApp('n2', { t: 'storage', id: 'id-n2' });
  assert.equal(g.admits('n2'), true);
});

test('a storageAsk is answered with this node\'s id', async () => {
  const { g, sent } = gate([]);
  await g.load();
  g.onApp('n3', { t: 'storageAsk' });
  assert.deepEqual(sent, [['n3', { t: 'storage', id: 'id-n1' }]]);
});
