// Field-by-field validation of Raft messages received from a peer. The Raft core trusts
// what it is given, so nothing reaches it that is not exactly a Message: every field has
// the right type, integers are safe and non-negative, `from` is the peer the link
// authenticated and `to` is this node. The tables below are typed against Message, Entry
// and SnapshotChunk, so a field added to those types does not compile until it is checked
// here too.
import type { ConfState, Entry, Message, MessageType, NodeId, SnapshotChunk, SnapshotMeta } from '../raft/types.js';

class Malformed extends Error {}

type Reader<T> = (value: unknown, path: string) => T;
interface Rule<T> {
  readonly optional: boolean;
  readonly read: Reader<T>;
}

const required = <T>(read: Reader<T>): Rule<T> => ({ optional: false, read });
const optional = <T>(read: Reader<T>): Rule<T> => ({ optional: true, read });

function fail(path: string, expected: string): never {
  throw new Malformed(`${path}: expected ${expected}`);
}

// `+ 0` turns -0 into 0, so an accepted value survives the wire unchanged.
const uint: Reader<number> = (v, path) => (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v + 0 : fail(path, 'a non-negative integer'));
const bool: Reader<boolean> = (v, path) => (typeof v === 'boolean' ? v : fail(path, 'a boolean'));
// Copied: a view would pin the whole receive buffer for as long as the log keeps the entry.
const bytes: Reader<Uint8Array> = (v, path) => (v instanceof Uint8Array ? Uint8Array.prototype.slice.call(v) : fail(path, 'binary'));
const nodeId: Reader<NodeId> = (v, path) => (typeof v === 'string' && v.length > 0 && v.length <= 256 ? v : fail(path, 'a node id'));

function oneOf<T extends string>(values: Readonly<Record<T, true>>): Reader<T> {
  return (v, path) => (typeof v === 'string' && Object.prototype.hasOwnProperty.call(values, v) ? (v as T) : fail(path, `one of ${Object.keys(values).join(', ')}`));
}

function arrayOf<T>(read: Reader<T>): Reader<T[]> {
  return (v, path) => {
    if (!Array.isArray(v)) fail(path, 'an array');
    // Array.from, not map: map skips the holes of a sparse array and would pass them on.
    return Array.from(v as unknown[], (item, i) => read(item, `${path}[${i}]`));
  };
}

/** Builds a reader for a map from one rule per field of T; unknown fields are ignored. */
function shape<T>(rules: { readonly [K in keyof T]-?: Rule<T[K]> }): Reader<T> {
  const keys = Object.keys(rules) as (keyof T & string)[];
  return (v, path) => {
    if (typeof v !== 'object' || v === null || Array.isArray(v) || v instanceof Uint8Array) fail(path, 'a map');
    const source = v as Record<string, unknown>;
    const out: Partial<Record<keyof T, unknown>> = {};
    for (const key of keys) {
      const raw = Object.prototype.hasOwnProperty.call(source, key) ? source[key] : undefined;
      const rule = rules[key];
      if (raw === undefined || raw === null) {
        if (!rule.optional) fail(`${path}.${key}`, 'a value');
        continue;
      }
      out[key] = rule.read(raw, `${path}.${key}`);
    }
    return out as T;
  };
}

const MESSAGE_TYPES: Readonly<Record<MessageType, true>> = {
  app: true,
  appResp: true,
  heartbeat: true,
  heartbeatResp: true,
  vote: true,
  voteResp: true,
  preVote: true,
  preVoteResp: true,
  snap: true,
  snapResp: true,
  timeoutNow: true,
  readIndex: true,
  readIndexResp: true,
};

const readEntry = shape<Entry>({
  term: required(uint),
  index: required(uint),
  type: required(oneOf<Entry['type']>({ normal: true, conf: true })),
  data: required(bytes),
});

const readConf = shape<ConfState>({ voters: required(arrayOf(nodeId)), learners: required(arrayOf(nodeId)) });

const readSnapshotMeta = shape<SnapshotMeta>({ index: required(uint), term: required(uint), conf: required(readConf) });

const readChunk = shape<SnapshotChunk>({
  meta: required(readSnapshotMeta),
  offset: required(uint),
  total: required(uint),
  data: required(bytes),
  done: required(bool),
});

const readMessage = shape<Message>({
  type: required(oneOf(MESSAGE_TYPES)),
  from: required(nodeId),
  to: required(nodeId),
  term: required(uint),
  index: optional(uint),
  logTerm: optional(uint),
  entries: optional(arrayOf(readEntry)),
  commit: optional(uint),
  reject: optional(bool),
  rejectHint: optional(uint),
  rejectTerm: optional(uint),
  context: optional(bytes),
  snapshot: optional(readChunk),
  offset: optional(uint),
  transfer: optional(bool),
});

/**
 * A Message rebuilt from `value` holding only the fields Message defines, or a description
 * of what is wrong. `from` must be the authenticated peer and `to` this node.
 */
export function parseRaftMessage(value: unknown, peer: NodeId, self: NodeId): Message | { readonly error: string } {
  try {
    const m = readMessage(value, 'message');
    if (m.from !== peer) return { error: `message.from is "${m.from}" but the link is authenticated as "${peer}"` };
    if (m.to !== self) return { error: `message.to is "${m.to}", not this node "${self}"` };
    return m;
  } catch (err) {
    if (err instanceof Malformed) return { error: err.message };
    return { error: 'unreadable message' };
  }
}
