// Valid examples of what crosses the wire, shared by the validator tests (each must be
// accepted unchanged) and the fuzz targets (the seeds that mutated inputs start from).
import type { Message } from '../../src/raft/types.js';
import type { Request } from '../../src/protocol/client-protocol.js';

const bin = (...b: number[]): Uint8Array => new Uint8Array(b);
const seq = { session: 42, seq: 3, ackedSeq: 2 };
const fence = { lock: 'db', token: 17 };

/**
 * One valid example of every op, with every optional field where the op has one. Index 6 is
 * an acquire (the fuzz targets forward it between peers); the `jobs/` names are inside the
 * prefixes the fuzzed gate's token may touch, so those requests get past the gate.
 */
export const VALID_REQUESTS: Request[] = [
  { id: 1, op: 'hello', version: 1, token: 'secret-token-0123456789' },
  { id: 2, op: 'status' },
  { id: 3, op: 'openSession', ttlMs: 10_000 },
  { id: 4, op: 'attach', session: 42 },
  { id: 5, op: 'keepAlive', session: 42 },
  { id: 6, op: 'closeSession', ...seq },
  { id: 7, op: 'acquire', ...seq, name: 'jobs/nightly', mode: 'shared', limit: 3, wait: true, lockDelayMs: 0 },
  { id: 8, op: 'release', ...seq, name: 'jobs/nightly', token: 99 },
  { id: 9, op: 'cancelWait', ...seq, name: 'jobs/nightly' },
  { id: 10, op: 'get', name: 'jobs/nightly' },
  { id: 11, op: 'locks', prefix: 'jobs/', limit: 100 },
  { id: 111, op: 'locks', prefix: '' },
  { id: 12, op: 'campaign', ...seq, election: 'leader', value: '' },
  { id: 13, op: 'proclaim', ...seq, election: 'leader', token: 5, value: 'host-b' },
  { id: 14, op: 'resign', ...seq, election: 'leader', token: 5 },
  { id: 141, op: 'resign', ...seq, election: 'leader' },
  { id: 15, op: 'leader', election: 'leader' },
  { id: 16, op: 'observe', election: 'leader' },
  { id: 17, op: 'unobserve', election: 'leader' },
  { id: 18, op: 'put', ...seq, key: 'cfg', value: bin(1, 2, 3), fence, ifRevision: 0 },
  { id: 19, op: 'delete', ...seq, key: 'cfg', fence, ifRevision: 4 },
  { id: 20, op: 'kvGet', key: 'cfg' },
  { id: 21, op: 'watch', prefix: 'cfg/' },
  { id: 22, op: 'unwatch', prefix: 'cfg/' },
  { id: 23, op: 'beginOp', ...seq, opKey: 'charge-7', fence, retry: true },
  { id: 24, op: 'completeOp', ...seq, opKey: 'charge-7', result: bin(9), fence },
  { id: 25, op: 'members' },
  { id: 26, op: 'addMember', member: 'n4', peerUrl: 'ws://127.0.0.1:7104', clientUrl: 'ws://127.0.0.1:7004' },
  { id: 27, op: 'removeMember', member: 'n4' },
  { id: 28, op: 'transferLeader', to: 'n2' },
  { id: 29, op: 'snapshot' },
  { id: 30, op: 'config' },
  { id: 31, op: 'configure', settings: { 'sessions.lockDelayMs': 4000 } },
  { id: 32, op: 'put', ...seq, key: 'svc/web-1', value: bin(1), ephemeral: true },
  {
    id: 33,
    op: 'txn',
    ...seq,
    compare: [
      { target: 'revision', key: 'cfg/a', op: 'eq', revision: 7 },
      { target: 'absent', key: 'cfg/b' },
      { target: 'lock', lock: 'jobs/nightly', token: 99 },
    ],
    success: [
      { op: 'put', key: 'cfg/a', value: bin(2) },
      { op: 'put', key: 'cfg/b', value: bin(3), ephemeral: true },
      { op: 'delete', key: 'cfg/c' },
    ],
    failure: [],
  },
  { id: 34, op: 'watch', prefix: 'cfg/', fromRevision: 7 },
  { id: 35, op: 'watch', prefix: 'cfg/', snapshot: true },
  { id: 36, op: 'sessions', prefix: 'web-', owner: 'jobs', limit: 10, after: 41 },
  { id: 37, op: 'sessionInfo', session: 42 },
  { id: 38, op: 'revokeSession', session: 42, reason: 'stuck holder, paged at 03:10' },
  { id: 39, op: 'keepAlives', sessions: [42, 43, 2 ** 40] },
  { id: 40, op: 'keepAlives', sessions: [] },
];

/** A raft message with every field set, indices past 2^32 included. */
export const RAFT_MESSAGE_WITH_EVERY_FIELD: Message = {
  type: 'app',
  from: 'n1',
  to: 'n2',
  term: 7,
  index: 2 ** 40,
  logTerm: 6,
  entries: [
    { term: 6, index: 2 ** 40 + 1, type: 'normal', data: bin(1, 2) },
    { term: 7, index: 2 ** 40 + 2, type: 'conf', data: bin() },
  ],
  commit: 2 ** 40,
  reject: false,
  rejectHint: 3,
  rejectTerm: 2,
  context: bin(9),
  snapshot: {
    meta: { index: 100, term: 5, conf: { voters: ['n1', 'n2', 'n3'], learners: [] } },
    offset: 0,
    total: 3,
    data: bin(1, 2, 3),
    done: true,
  },
  offset: 3,
  transfer: true,
};
