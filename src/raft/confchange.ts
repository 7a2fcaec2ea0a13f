// Encoding of a ConfChange carried in a `conf` entry: a small fixed layout so that the core
// can read membership changes without a serialisation library.
//   byte 0: type (1 addLearner, 2 promote, 3 remove) | u16 id length | id (UTF-8) | context
import type { ConfChange, ConfChangeType, ConfState, NodeId } from './types.js';

const TYPES: readonly ConfChangeType[] = ['addLearner', 'promote', 'remove'];
const utf8 = new TextEncoder();
const fromUtf8 = new TextDecoder('utf-8', { fatal: true });

export function encodeConfChange(cc: ConfChange): Uint8Array {
  const id = utf8.encode(cc.node);
  const ctx = cc.context ?? new Uint8Array(0);
  const out = new Uint8Array(3 + id.length + ctx.length);
  out[0] = TYPES.indexOf(cc.type) + 1;
  out[1] = id.length >> 8;
  out[2] = id.length & 0xff;
  out.set(id, 3);
  out.set(ctx, 3 + id.length);
  return out;
}

export function decodeConfChange(data: Uint8Array): ConfChange {
  const type = TYPES[(data[0] ?? 0) - 1];
  const len = ((data[1] ?? 0) << 8) | (data[2] ?? 0);
  if (!type || data.length < 3 + len || len === 0) throw new Error('raft: malformed conf change entry');
  const node = fromUtf8.decode(data.subarray(3, 3 + len));
  const context = data.subarray(3 + len);
  return context.length ? { type, node, context } : { type, node };
}

/** Why a change cannot be applied to `conf`, or null when it can. */
export function confChangeError(conf: ConfState, cc: ConfChange): string | null {
  const isVoter = conf.voters.includes(cc.node);
  const isLearner = conf.learners.includes(cc.node);
  switch (cc.type) {
    case 'addLearner':
      return isVoter || isLearner ? `${cc.node} is already a member` : null;
    case 'promote':
      return isLearner ? null : `${cc.node} is not a learner`;
    case 'remove':
      if (!isVoter && !isLearner) return `${cc.node} is not a member`;
      if (isVoter && conf.voters.length === 1) return 'cannot remove the last voter';
      return null;
  }
}

export function applyToConfState(conf: ConfState, cc: ConfChange): ConfState {
  const without = (xs: readonly NodeId[]) => xs.filter((x) => x !== cc.node);
  switch (cc.type) {
    case 'addLearner':
      return { voters: [...conf.voters], learners: [...conf.learners, cc.node] };
    case 'promote':
      return { voters: [...conf.voters, cc.node], learners: without(conf.learners) };
    case 'remove':
      return { voters: without(conf.voters), learners: without(conf.learners) };
  }
}
