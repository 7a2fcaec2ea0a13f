// The proof a node gives a challenge hello (src/protocol/node-proof.ts) is part of the protocol: clients in other
// languages compute it from docs/protocol.md, so the page's test vector is checked here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { nodeProof, proofMatches, tokenDigest, tokenIdOf } from '../../src/protocol/node-proof.js';
import { ROOT } from '../support/node-process.js';

test("docs/protocol.md's test vector is what the code computes", () => {
  const page = readFileSync(join(ROOT, 'docs/protocol.md'), 'utf8').replace(/\s+/g, ' ');
  const vector = /Test vector .*?token `([^`]+)`, clusterId `([^`]+)`, clientUrl `([^`]+)`, nonce `([0-9a-f]+)` give tokenId `([0-9a-f]+)` and proof `([0-9a-f]+)`/.exec(page);
  assert.ok(vector, 'the page has a test vector');
  const [, token, clusterId, clientUrl, nonce, tokenId, proof] = vector;
  const digest = tokenDigest(token!);
  assert.equal(tokenIdOf(digest).toString('hex'), tokenId);
  assert.equal(nodeProof(digest, clusterId!, clientUrl!, Buffer.from(nonce!, 'hex')).toString('hex'), proof);
});

test('a proof holds for one token, one cluster, one client URL and one nonce', () => {
  const digest = tokenDigest('a-token-of-this-test-0123');
  const nonce = Buffer.alloc(16, 1);
  const proof = nodeProof(digest, 'c', 'ws://127.0.0.1:7001', nonce);
  assert.ok(proofMatches(proof, digest, 'c', 'ws://127.0.0.1:7001', nonce));
  assert.ok(!proofMatches(proof, tokenDigest('another-token-0123456789'), 'c', 'ws://127.0.0.1:7001', nonce));
  assert.ok(!proofMatches(proof, digest, 'd', 'ws://127.0.0.1:7001', nonce));
  assert.ok(!proofMatches(proof, digest, 'c', 'ws://127.0.0.1:7002', nonce));
  assert.ok(!proofMatches(proof, digest, 'c', 'ws://127.0.0.1:7001', Buffer.alloc(16, 2)));
  assert.ok(!proofMatches(undefined, digest, 'c', 'ws://127.0.0.1:7001', nonce));
  assert.ok(!proofMatches(proof.subarray(0, 31), digest, 'c', 'ws://127.0.0.1:7001', nonce));
  // Fields are length-prefixed: moving bytes from one field to the next changes the proof.
  assert.notDeepEqual(nodeProof(digest, 'ab', 'c', nonce), nodeProof(digest, 'a', 'bc', nonce));
});
