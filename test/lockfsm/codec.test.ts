import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Packr } from 'msgpackr';
import {
  decodeCommand,
  DEFAULT_MACHINE_CONFIG,
  encodeCommand,
  LockMachine,
  validateCommand,
  type Command,
} from '../../src/lockfsm/index.js';
import { bytes } from './driver.js';

const raw = new Packr({ useRecords: false });
const fence = { lock: 'L', token: 3 };

const EXAMPLES: Command[] = [
  { type: 'openSession', ttlMs: 10_000 },
  { type: 'closeSession', session: 1, seq: 4, ackedSeq: 2 },
  { type: 'expireSession', session: 1 },
  { type: 'acquire', session: 1, seq: 1, name: 'db', mode: 'shared', limit: 3, wait: true, lockDelayMs: 100, fence },
  { type: 'release', session: 1, seq: 2, name: 'db', token: 5 },
  { type: 'cancelWait', session: 1, seq: 3, name: 'db' },
  { type: 'lockDelayElapsed', name: 'db', since: 9 },
  { type: 'campaign', session: 1, seq: 5, election: 'svc', value: 'host:1' },
  { type: 'proclaim', session: 1, seq: 6, election: 'svc', token: 7, value: '' },
  { type: 'resign', session: 1, seq: 7, election: 'svc' },
  { type: 'put', session: 1, seq: 8, key: 'k', value: bytes(1, 2), fence, ifRevision: 0 },
  { type: 'delete', session: 1, seq: 9, key: 'k', ifRevision: 12 },
  { type: 'beginOp', session: 1, seq: 10, opKey: 'op', fence, retry: true, at: 1_700_000_000_000 },
  { type: 'completeOp', session: 1, seq: 11, opKey: 'op', result: bytes(9), fence, at: 1_700_000_000_001 },
  { type: 'pruneOps', olderThan: 1_700_000_000_000, abandonedOlderThan: 1_600_000_000_000, max: 100 },
];

function code(v: Command | { type: 'error'; code: string }): string {
  return v.type === 'error' ? v.code : 'ok';
}

describe('codec', () => {
  it('round-trips every command type', () => {
    for (const cmd of EXAMPLES) assert.deepEqual(decodeCommand(encodeCommand(cmd)), cmd, cmd.type);
  });

  it('encodes canonically: field order and undefined optionals do not change the bytes', () => {
    const a = encodeCommand({ type: 'release', session: 1, seq: 2, name: 'x', token: 3 });
    const b = encodeCommand({ token: 3, name: 'x', seq: 2, session: 1, type: 'release', ackedSeq: undefined } as Command);
    assert.deepEqual(a, b);
  });

  it('accepts Node Buffers and hands back plain Uint8Array values', () => {
    const cmd = decodeCommand(Buffer.from(encodeCommand(EXAMPLES[10]!)));
    assert.equal(cmd.type, 'put');
    assert.equal(cmd.type === 'put' && Object.getPrototypeOf(cmd.value), Uint8Array.prototype);
  });

  it('refuses encoding an invalid command', () => {
    assert.throws(() => encodeCommand({ type: 'openSession', ttlMs: -5 }), /cannot encode/);
  });

  it('refuses malformed data with INVALID_ARGUMENT, never throwing', () => {
    const cases: [string, Uint8Array][] = [
      ['empty', new Uint8Array()],
      ['garbage', bytes(0xc1, 0xff, 0x00)],
      ['truncated', encodeCommand(EXAMPLES[3]!).subarray(0, 10)],
      ['trailing bytes', new Uint8Array([...encodeCommand(EXAMPLES[0]!), 0x01])],
      ['not an object', raw.pack(42)],
      ['an array', raw.pack([1, 2])],
      ['unknown type', raw.pack({ type: 'dropTables' })],
      ['no type', raw.pack({ ttlMs: 5000 })],
      ['extra field', raw.pack({ type: 'openSession', ttlMs: 5000, admin: true })],
      ['missing field', raw.pack({ type: 'release', session: 1, seq: 1, name: 'x' })],
      ['float id', raw.pack({ type: 'expireSession', session: 1.5 })],
      ['negative id', raw.pack({ type: 'expireSession', session: -1 })],
      ['zero id', raw.pack({ type: 'expireSession', session: 0 })],
      ['unsafe integer', raw.pack({ type: 'expireSession', session: 2 ** 60 })],
      ['string number', raw.pack({ type: 'expireSession', session: '1' })],
      ['bad mode', raw.pack({ type: 'acquire', session: 1, seq: 1, name: 'x', mode: 'read', wait: true })],
      ['wait not boolean', raw.pack({ type: 'acquire', session: 1, seq: 1, name: 'x', mode: 'shared', wait: 1 })],
      ['value not bytes', raw.pack({ type: 'put', session: 1, seq: 1, key: 'k', value: 'text' })],
      ['fence with extra', raw.pack({ type: 'delete', session: 1, seq: 1, key: 'k', fence: { lock: 'L', token: 1, x: 1 } })],
      ['fence not object', raw.pack({ type: 'delete', session: 1, seq: 1, key: 'k', fence: [1, 2] })],
      ['proto key', raw.pack(JSON.parse('{"type":"expireSession","session":1,"__proto__":{"x":1}}'))],
      ['deep nesting', new Uint8Array([...new Array(100_000).fill(0x91), 0x01])],
    ];
    for (const [what, data] of cases) {
      const r = decodeCommand(data);
      assert.equal(code(r), 'INVALID_ARGUMENT', what);
    }
  });

  it('checks config bounds while decoding', () => {
    const longName = raw.pack({ type: 'cancelWait', session: 1, seq: 1, name: 'x'.repeat(300) });
    assert.equal(code(decodeCommand(longName)), 'INVALID_ARGUMENT');
    assert.equal(code(decodeCommand(longName, { ...DEFAULT_MACHINE_CONFIG, maxNameLength: 300 })), 'ok');
    const bigValue = raw.pack({ type: 'put', session: 1, seq: 1, key: 'k', value: new Uint8Array(70_000) });
    assert.equal(code(decodeCommand(bigValue)), 'LIMIT_EXCEEDED');
  });

  it('normalizes -0 so it cannot encode differently from 0', () => {
    const v = validateCommand({ type: 'pruneOps', olderThan: -0 }, DEFAULT_MACHINE_CONFIG);
    assert.ok(v.type === 'pruneOps' && Object.is(v.olderThan, 0));
  });

  it('any bytes: decodeCommand and applyRaw never throw, and the entry counts as applied', () => {
    const m = new LockMachine();
    let index = 0;
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (data) => {
        const r = m.applyRaw(++index, data);
        assert.equal(typeof r.result.type, 'string');
        assert.equal(m.appliedIndex, index);
      }),
      { numRuns: 2000 },
    );
  });

  it('any msgpack value: validation answers, never throws', () => {
    fc.assert(
      fc.property(
        fc.record(
          {
            type: fc.constantFrom('openSession', 'acquire', 'put', 'beginOp', 'release', 'nope'),
            session: fc.oneof(fc.integer(), fc.double(), fc.string()),
            seq: fc.oneof(fc.nat(), fc.constant(null)),
            name: fc.oneof(fc.string(), fc.nat()),
            mode: fc.constantFrom('shared', 'exclusive', 'x'),
            wait: fc.oneof(fc.boolean(), fc.constant(0)),
            ttlMs: fc.integer(),
            fence: fc.oneof(fc.constant(null), fc.record({ lock: fc.string(), token: fc.integer() })),
          },
          { requiredKeys: ['type'] },
        ),
        (value) => {
          const r = decodeCommand(raw.pack(value));
          assert.equal(typeof r.type, 'string');
        },
      ),
      { numRuns: 1000 },
    );
  });
});

describe('index contract', () => {
  it('apply/applyRaw/skip throw on a non-increasing index and change nothing', () => {
    const m = new LockMachine();
    m.apply(5, { type: 'openSession', ttlMs: 5000 });
    assert.throws(() => m.apply(5, { type: 'openSession', ttlMs: 5000 }), RangeError);
    assert.throws(() => m.applyRaw(4, encodeCommand({ type: 'openSession', ttlMs: 5000 })), RangeError);
    assert.throws(() => m.skip(0), RangeError);
    assert.throws(() => m.skip(6.5), RangeError);
    assert.equal(m.appliedIndex, 5);
    assert.equal(m.stats().sessions, 1);
    m.skip(6);
    assert.equal(m.appliedIndex, 6);
  });

  it('a failing entry still advances appliedIndex', () => {
    const m = new LockMachine();
    const r = m.apply(3, { type: 'release', session: 77, seq: 1, name: 'x', token: 1 });
    assert.equal(r.result.type === 'error' && r.result.code, 'UNKNOWN_SESSION');
    assert.equal(m.appliedIndex, 3);
    m.apply(4, { type: 'bogus' } as unknown as Command);
    assert.equal(m.appliedIndex, 4);
  });
});
