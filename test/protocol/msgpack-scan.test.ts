// The bytes of a frame must pay for the objects it decodes to, and a refused frame's id is
// read without decoding it.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { FrameError, OBJECTS_BASE, decodeFrame, encodeFrame, maxObjectsFor } from '../../src/protocol/codec.js';
import { peekRequestId, scanMsgpack } from '../../src/protocol/msgpack-scan.js';
import { recoverRequestId } from '../../src/protocol/validate.js';

/** array32 header followed by `n` copies of `item`. */
function arrayOf(n: number, item: number[]): Uint8Array {
  const out = Buffer.alloc(5 + n * item.length);
  out[0] = 0xdd;
  out.writeUInt32BE(n, 1);
  for (let i = 0; i < n; i++) out.set(item, 5 + i * item.length);
  return out;
}

function refused(bytes: Uint8Array, pattern: RegExp): void {
  assert.throws(
    () => decodeFrame(bytes),
    (err: unknown) => err instanceof FrameError && pattern.test(err.message),
  );
}

describe('msgpack scan: objects must be paid for by bytes', () => {
  test('a MiB of empty maps, arrays, strings or binaries is refused by the scan, before decoding', () => {
    const mib = 1 << 20;
    for (const item of [[0x80], [0x90], [0xa0], [0xc4, 0x00], [0x91, 0x80]]) {
      const n = Math.floor(mib / item.length);
      const frame = arrayOf(n, item);
      // Every one of these is valid msgpack that msgpackr would decode; a byte that is never
      // valid (0xc1) after the object one past the bound shows the scan stopped there instead
      // of walking the MiB: it names the bound, not the bad byte.
      const bound = maxObjectsFor(frame.length);
      const stopAt = 5 + (bound + 1) * item.length;
      frame[stopAt] = 0xc1;
      refused(frame, new RegExp(`more than ${bound} maps, arrays, strings and binaries`));
    }
  });

  test('the bound is OBJECTS_BASE plus a quarter of the length', () => {
    assert.equal(maxObjectsFor(0), OBJECTS_BASE);
    assert.equal(maxObjectsFor(4096), OBJECTS_BASE + 1024);
    // Exactly at the bound passes; one more does not.
    const fits = (n: number): boolean => scanMsgpack(arrayOf(n, [0x80]), { maxDepth: 32, maxObjects: maxObjectsFor(5 + n) }) === null;
    const k = 2000; // (5 + k) / 4 + 256 < k + 1 for k this large: refused; small ones pass
    assert.equal(fits(k), false);
    assert.equal(fits(300), true);
  });

  test('count claims still must fit the remaining bytes', () => {
    const lie = Buffer.from([0xdd, 0xff, 0xff, 0xff, 0xff, 0x80]);
    refused(lie, /count exceeds the remaining bytes/);
    const mapLie = Buffer.from([0xdf, 0x7f, 0xff, 0xff, 0xff, 0xa0, 0xc0]);
    refused(mapLie, /count exceeds the remaining bytes/);
  });

  test('our own dense frames pass: Raft appends of empty entries, requests, lock lists', () => {
    const entries = Array.from({ length: 20_000 }, (_, i) => ({ term: 3, index: 1_000_000 + i, type: 'normal', data: new Uint8Array(0) }));
    const append = { k: 'r', m: [{ type: 'app', from: 'n1', to: 'n2', term: 3, index: 999_999, logTerm: 3, commit: 999_999, entries }] };
    assert.deepEqual((decodeFrame(encodeFrame(append)) as typeof append).m[0]!.entries.length, 20_000);
    const locks = Array.from({ length: 5000 }, (_, i) => ({ name: `l/${i}`, holders: [{ session: i, token: i, mode: 'shared' }], waiters: [] }));
    decodeFrame(encodeFrame({ id: 1, ok: true, result: locks }));
    decodeFrame(encodeFrame({ id: 1, op: 'put', session: 5, seq: 6, key: 'k', value: new Uint8Array(100_000) }));
  });

  test('any JSON-like value of ours round-trips under the bound', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 6 }), (v) => {
        decodeFrame(encodeFrame({ v }));
      }),
      { numRuns: 2000 },
    );
  });
});

describe('peekRequestId', () => {
  test('finds id wherever it sits in the top-level map, without decoding the rest', () => {
    const big = new Uint8Array(3 << 20);
    assert.equal(peekRequestId(encodeFrame({ id: 7, op: 'put', value: big })), 7);
    assert.equal(peekRequestId(encodeFrame({ op: 'put', value: big, nested: { a: [1, { b: 'x' }], c: [] }, id: 123456789012 })), 123456789012);
    assert.equal(peekRequestId(encodeFrame({ op: 'status', id: 0 })), 0);
    // A frame of a million empty maps and then the id: the walk allocates nothing.
    const maps = Buffer.concat([Buffer.from([0x82, 0xa1, 0x78]), arrayOf(1 << 20, [0x80]), Buffer.from([0xa2, 0x69, 0x64, 0x2a])]);
    assert.equal(peekRequestId(maps), 42);
  });

  test('no readable id: undefined', () => {
    for (const v of [{ op: 'x' }, { id: -1 }, { id: 1.5 }, { id: 'one' }, { id: 2 ** 53 }, [1, 2], 7, 'id', { ID: 1 }]) {
      assert.equal(peekRequestId(encodeFrame(v)), undefined, JSON.stringify(v));
    }
    assert.equal(peekRequestId(new Uint8Array(0)), undefined);
    assert.equal(peekRequestId(Buffer.from([0x82, 0xa1, 0x78, 0xdd, 0xff, 0xff, 0xff, 0xff])), undefined);
    assert.equal(peekRequestId(Buffer.from([0x81, 0xa2, 0x69, 0x64])), undefined);
  });

  test('agrees with decoding wherever both can read', () => {
    const request = fc.dictionary(fc.string({ maxLength: 4 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 6 });
    const id = fc.oneof(fc.nat(), fc.maxSafeNat(), fc.integer({ min: -5, max: -1 }), fc.double(), fc.constant(null));
    fc.assert(
      fc.property(request, id, fc.boolean(), (body, i, idFirst) => {
        const frame = encodeFrame(idFirst ? { id: i, ...body } : { ...body, id: i });
        assert.equal(peekRequestId(frame), recoverRequestId(decodeFrame(frame)));
      }),
      { numRuns: 3000 },
    );
  });
});
