// How a node proves to a client that it belongs to the client's cluster before the client
// sends it a token (docs/protocol.md §3, "Proving a node"). The only secret a client and
// the cluster share is the client's token, and a node keeps only the token's SHA-256
// digest; so the node proves that it holds that digest: an HMAC keyed by it over a nonce
// the client just drew, the cluster id and the node's own client URL. The URL binds the
// proof to the address the client dialled: a node planted at another address that relays
// the client's challenge to a real node gets back a proof for the real node's URL, which
// the client refuses. A clusterId alone proves nothing (every hello says it).
//
// Both sides compute these with the same functions, so the derivation is written once.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { PROOF_BYTES, TOKEN_ID_BYTES } from './client-protocol.js';

/** What a node keeps of a token (and the key of every proof about it). */
export function tokenDigest(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

/** Names the token in a challenge without revealing it: the node finds its digest by it. */
export function tokenIdOf(digest: Uint8Array): Buffer {
  return createHmac('sha256', digest).update('palisade/token-id/v1').digest().subarray(0, TOKEN_ID_BYTES);
}

/** The node's answer to a challenge: HMAC(digest, label | clusterId | clientUrl | nonce),
 *  each field length-prefixed so that no two inputs read the same. */
export function nodeProof(digest: Uint8Array, clusterId: string, clientUrl: string, nonce: Uint8Array): Buffer {
  const mac = createHmac('sha256', digest).update('palisade/node-proof/v1');
  for (const part of [Buffer.from(clusterId, 'utf8'), Buffer.from(clientUrl, 'utf8'), Buffer.from(nonce)]) {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(part.length);
    mac.update(length).update(part);
  }
  return mac.digest();
}

/** Whether `proof` is the one a node holding `digest` gives at `clientUrl` of `clusterId`. */
export function proofMatches(proof: Uint8Array | undefined, digest: Uint8Array, clusterId: string, clientUrl: string, nonce: Uint8Array): boolean {
  if (proof === undefined || proof.length !== PROOF_BYTES) return false;
  return timingSafeEqual(proof, nodeProof(digest, clusterId, clientUrl, nonce));
}
