// Key layout of the LevelDB database (keys are raw bytes):
//
//   "meta"            identity and format version (written once, when the db is created)
//   "hard"            HardState
//   "snap"            the latest Snapshot (metadata and data in one value)
//   "join"            present when the node was started to join a running cluster
//   "peer/" + id      the storage id this node first saw that peer present (peer-identity.ts)
//   "e" + u64be(i)    the log entry at index i
//
// Entry keys are big-endian so that LevelDB's byte order is log order: a range scan reads
// the log in sequence and a range bound is an index bound. No other key starts with "e".

const ascii = (s: string): Uint8Array => new TextEncoder().encode(s);

export const META_KEY = ascii('meta');
export const HARD_STATE_KEY = ascii('hard');
export const SNAPSHOT_KEY = ascii('snap');
export const JOINING_KEY = ascii('join');
export const PEER_PREFIX = 'peer/';

export function peerKey(id: string): Uint8Array {
  return ascii(PEER_PREFIX + id);
}

const ENTRY_PREFIX = 0x65; // "e"
const ENTRY_KEY_BYTES = 9;

export function entryKey(index: number): Uint8Array {
  if (!Number.isSafeInteger(index) || index < 0) throw new RangeError(`entry index ${index} is not a safe non-negative integer`);
  const key = new Uint8Array(ENTRY_KEY_BYTES);
  key[0] = ENTRY_PREFIX;
  const view = new DataView(key.buffer);
  view.setUint32(1, Math.floor(index / 2 ** 32));
  view.setUint32(5, index >>> 0);
  return key;
}

/** The index an entry key encodes, or null when the key is not a well-formed entry key. */
export function entryIndexOf(key: Uint8Array): number | null {
  if (key.length !== ENTRY_KEY_BYTES || key[0] !== ENTRY_PREFIX) return null;
  const view = new DataView(key.buffer, key.byteOffset, key.byteLength);
  const index = view.getUint32(1) * 2 ** 32 + view.getUint32(5);
  return Number.isSafeInteger(index) ? index : null;
}

/** Bounds that select every entry key and nothing else. */
export const ALL_ENTRIES = { gte: entryKey(0), lte: new Uint8Array([ENTRY_PREFIX, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]) };

export function keyName(key: Uint8Array): string {
  const index = entryIndexOf(key);
  return index === null ? new TextDecoder().decode(key) : `entry ${index}`;
}
