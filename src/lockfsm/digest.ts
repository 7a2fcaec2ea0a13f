// The digest a stored answer keeps of the command that produced it, so that a seq reused
// for a different command is refused instead of answered with another command's result.
//
// It covers the command's canonical encoding (validateCommand fixes the field order) minus
// the fields a faithful retry may change: `ackedSeq` (the client acknowledges more as it
// goes) and `at` (the leader stamps its clock into each proposal). The hash is cyrb53, a
// fast 53-bit non-cryptographic hash that fits in a JS number: deterministic on every node,
// and sufficient here because only the session's owner can send commands on it (the node
// checks ownership), so a crafted collision could only confuse the attacker's own session.

import { packToBytes } from './codec.js';
import type { SessionCommand } from './types.js';

const VOLATILE = new Set(['ackedSeq', 'at']);

export function commandDigest(cmd: SessionCommand): number {
  const stable: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(cmd)) if (!VOLATILE.has(k)) stable[k] = v;
  return cyrb53(packToBytes(stable));
}

function cyrb53(bytes: Uint8Array): number {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    h1 = Math.imul(h1 ^ b, 2654435761);
    h2 = Math.imul(h2 ^ b, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return 4294967296 * (2097151 & h2) + (h1 >>> 0);
}
