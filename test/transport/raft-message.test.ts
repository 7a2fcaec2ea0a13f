import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import type { Message } from '../../src/raft/types.js';
import { decodeFrame, encodeFrame } from '../../src/protocol/codec.js';
import { parseRaftMessage } from '../../src/transport/raft-message.js';
import { RAFT_MESSAGE_WITH_EVERY_FIELD } from './examples.js';

const full = RAFT_MESSAGE_WITH_EVERY_FIELD;

const wire = (m: unknown): unknown => decodeFrame(encodeFrame(m));

describe('parseRaftMessage', () => {
  test('a message with every field survives the wire unchanged', () => {
    assert.deepEqual(parseRaftMessage(wire(full), 'n1', 'n2'), full);
    const minimal: Message = { type: 'heartbeatResp', from: 'n1', to: 'n2', term: 1 };
    assert.deepEqual(parseRaftMessage(wire(minimal), 'n1', 'n2'), minimal);
  });

  test('unknown fields are dropped, nil optional fields are absent', () => {
    assert.deepEqual(parseRaftMessage({ type: 'vote', from: 'n1', to: 'n2', term: 1, index: null, evil: 'x' }, 'n1', 'n2'), {
      type: 'vote',
      from: 'n1',
      to: 'n2',
      term: 1,
    });
  });

  test('from must be the authenticated peer and to this node', () => {
    assert.match((parseRaftMessage(full, 'n3', 'n2') as { error: string }).error, /authenticated as "n3"/);
    assert.match((parseRaftMessage(full, 'n1', 'n3') as { error: string }).error, /not this node "n3"/);
  });

  test('every field is type-checked', () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ ...full, type: 'appendEntries' }, /message.type/],
      [{ ...full, term: -1 }, /message.term/],
      [{ ...full, term: 1.5 }, /message.term/],
      [{ ...full, index: '3' }, /message.index/],
      [{ ...full, reject: 0 }, /message.reject/],
      [{ ...full, context: 'ctx' }, /message.context/],
      [{ ...full, entries: {} }, /message.entries/],
      [{ ...full, entries: [{ term: 1, index: 1, type: 'normal' }] }, /message.entries\[0\].data/],
      [{ ...full, entries: [{ term: 1, index: 1, type: 'weird', data: new Uint8Array() }] }, /entries\[0\].type/],
      [{ ...full, snapshot: { ...full.snapshot, done: 'yes' } }, /snapshot.done/],
      [{ ...full, snapshot: { ...full.snapshot, meta: { index: 1, term: 1, conf: { voters: [1], learners: [] } } } }, /voters\[0\]/],
      [{ ...full, transfer: 'true' }, /message.transfer/],
      [{ ...full, offset: -5 }, /message.offset/],
    ];
    assert.equal((parseRaftMessage({ ...full, term: -0 }, 'n1', 'n2') as Message).term, 0);
    assert.ok(Object.is((parseRaftMessage({ ...full, term: -0 }, 'n1', 'n2') as Message).term, 0));
    for (const [m, pattern] of cases) {
      const r = parseRaftMessage(m, 'n1', 'n2');
      assert.ok('error' in r, `expected an error for ${pattern}`);
      assert.match(r.error, pattern);
    }
  });

  test('fuzz: never throws; what it accepts is a fixed point', () => {
    const mutated = fc.tuple(fc.constantFrom(...Object.keys(full)), fc.anything({ maxDepth: 3 })).map(([k, v]) => ({ ...full, [k]: v }));
    fc.assert(
      fc.property(fc.oneof(fc.anything({ maxDepth: 4 }), mutated), (x) => {
        const r = parseRaftMessage(x, 'n1', 'n2');
        if (!('error' in r)) assert.deepEqual(parseRaftMessage(wire(r), 'n1', 'n2'), r);
      }),
      { numRuns: 3000 },
    );
  });
});
