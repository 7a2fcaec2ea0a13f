// The wire answer of every write op for every machine result it can give: the shapes clients
// of any version read (docs/protocol.md), spelled out so that a change of the mapping shows.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { answerFor } from '../../src/server/api/wire.js';

const holders = [{ session: 3, token: 9, mode: 'exclusive' as const }];
const bytes = new Uint8Array([1, 2]);

test('each write answers its result in the shape of the protocol, with the entry index', () => {
  const cases: [Parameters<typeof answerFor>, unknown][] = [
    [['openSession', { type: 'session', session: 7, ttlMs: 5000 }, 7], { session: 7, ttlMs: 5000 }],
    [['closeSession', { type: 'ok' }, 8], { index: 8 }],
    [['acquire', { type: 'granted', token: 9, mode: 'exclusive' }, 9], { status: 'granted', token: 9, index: 9 }],
    [['acquire', { type: 'queued', position: 2 }, 10], { status: 'queued', position: 2, index: 10 }],
    [['acquire', { type: 'busy', holders, holderCount: 1, delayed: false }, 11], { status: 'busy', holders, delayed: false, index: 11 }],
    [['release', { type: 'ok' }, 12], { index: 12 }],
    [['cancelWait', { type: 'ok' }, 13], { index: 13 }],
    [['campaign', { type: 'leader', token: 14 }, 14], { status: 'leader', token: 14, index: 14 }],
    [['campaign', { type: 'queued', position: 1 }, 15], { status: 'queued', position: 1, index: 15 }],
    [['proclaim', { type: 'ok' }, 16], { index: 16 }],
    [['resign', { type: 'ok' }, 17], { index: 17 }],
    [['put', { type: 'written', revision: 18 }, 18], { revision: 18, index: 18 }],
    [['delete', { type: 'deleted', existed: true, revision: 19 }, 19], { existed: true, revision: 19, index: 19 }],
    [['beginOp', { type: 'run', idempotencyKey: 'k', attempt: 1 }, 20], { status: 'run', idempotencyKey: 'k', attempt: 1, index: 20 }],
    [['beginOp', { type: 'retry', idempotencyKey: 'k', attempt: 2 }, 21], { status: 'run', idempotencyKey: 'k', attempt: 2, index: 21 }],
    [['beginOp', { type: 'done', idempotencyKey: 'k', result: bytes }, 22], { status: 'done', idempotencyKey: 'k', result: bytes, index: 22 }],
    [['beginOp', { type: 'inDoubt', idempotencyKey: 'k', attempt: 1, token: 5 }, 23], { status: 'inDoubt', idempotencyKey: 'k', attempt: 1, token: 5, index: 23 }],
    [['completeOp', { type: 'completed', idempotencyKey: 'k' }, 24], { idempotencyKey: 'k', index: 24 }],
  ];
  for (const [[op, result, index], expected] of cases) assert.deepEqual(answerFor(op, result, index), { ok: true, result: expected }, `${op} ${result.type}`);
});

test('a machine error is the same error on the wire, with the current token or revision', () => {
  assert.deepEqual(answerFor('release', { type: 'error', code: 'NOT_HOLDER', message: 'no', currentToken: null }, 5), {
    ok: false,
    error: { code: 'NOT_HOLDER', message: 'no', currentToken: null },
  });
  assert.deepEqual(answerFor('put', { type: 'error', code: 'CONFLICT', message: 'rev', currentRevision: 4 }, 6), {
    ok: false,
    error: { code: 'CONFLICT', message: 'rev', currentRevision: 4 },
  });
});

test('a result the op never gives is INTERNAL, not a misshapen answer', () => {
  const ans = answerFor('acquire', { type: 'written', revision: 3 }, 3);
  assert.equal(ans.ok ? 'ok' : ans.error.code, 'INTERNAL');
});
