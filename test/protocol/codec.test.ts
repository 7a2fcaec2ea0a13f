import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { FrameError, MAX_FRAME_DEPTH, decodeFrame, encodeFrame } from '../../src/protocol/codec.js';
import { scanMsgpack } from '../../src/protocol/msgpack-scan.js';

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');
const bytesOf = (...b: number[]): Uint8Array => new Uint8Array(b);

function assertFrameError(bytes: Uint8Array, pattern?: RegExp): void {
  assert.throws(
    () => decodeFrame(bytes),
    (err: unknown) => {
      assert.ok(err instanceof FrameError, `expected FrameError, got ${String(err)}`);
      if (pattern) assert.match(err.message, pattern);
      return true;
    },
  );
}

/** Nested arrays [[[...1...]]] of the given depth, as msgpack bytes. */
function nestedArrays(depth: number): Uint8Array {
  const out = new Uint8Array(depth + 1).fill(0x91);
  out[depth] = 0x01;
  return out;
}

describe('codec', () => {
  test('plain values round-trip; binary comes back as plain Uint8Array', () => {
    const frame = {
      id: 7,
      op: 'put',
      key: 'k/ü/🔒',
      value: new Uint8Array([0, 1, 254, 255]),
      nested: { list: [1, -1, 0.5, true, false, null, 'x'], empty: {}, none: [] },
    };
    const decoded = decodeFrame(encodeFrame(frame)) as typeof frame;
    assert.deepEqual(decoded, frame);
    assert.equal(Object.getPrototypeOf(decoded.value), Uint8Array.prototype);
  });

  test('integers stay numbers at every size, and large ones travel as msgpack integers', () => {
    const values = [0, 127, 128, 65535, 2 ** 32 - 1, 2 ** 32, 2 ** 40 + 3, Number.MAX_SAFE_INTEGER, -1, -(2 ** 31), -(2 ** 31) - 1, Number.MIN_SAFE_INTEGER];
    for (const n of values) {
      const bytes = encodeFrame({ n });
      const decoded = decodeFrame(bytes) as { n: unknown };
      assert.equal(typeof decoded.n, 'number');
      assert.equal(decoded.n, n);
      // {n: value}: fixmap, fixstr "n", then the value's type byte.
      assert.notEqual(bytes[3], 0xcb, `${n} is not written as a float64: ${hex(bytes)}`);
    }
    // uint64/int64 from another encoder decode as numbers too.
    assert.equal(decodeFrame(bytesOf(0xcf, 0, 0, 0, 1, 0, 0, 0, 0)), 2 ** 32);
    assert.equal(decodeFrame(bytesOf(0xd3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)), -1);
  });

  test('undefined properties are left out, never written as an extension', () => {
    const bytes = encodeFrame({ a: 1, b: undefined });
    assert.equal(scanMsgpack(bytes, { maxDepth: 4 }), null);
    assert.deepEqual(decodeFrame(bytes), { a: 1 });
  });

  test('encoded frames never contain extension types', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.uint8Array(), (json, bin) => {
        const bytes = encodeFrame({ json, bin });
        assert.equal(scanMsgpack(bytes, { maxDepth: 1000 }), null);
      }),
      { numRuns: 300 },
    );
  });

  test('garbage is a FrameError', () => {
    assertFrameError(new Uint8Array(0), /empty/);
    assertFrameError(bytesOf(0xc1), /0xc1/);
    assertFrameError(bytesOf(0x01, 0x02), /trailing/);
    assertFrameError(bytesOf(0x92, 0x01), /truncated/);
    assertFrameError(bytesOf(0xd4, 0x00, 0x00), /extension/); // msgpackr's "undefined"
    assertFrameError(bytesOf(0xd6, 0xff, 0, 0, 0, 0), /extension/); // timestamp
    assertFrameError(bytesOf(0xc7, 0x01, 0x40, 0x00), /extension/);
    assertFrameError(bytesOf(0x81, 0x01, 0x02), /key is not a string/);
    assertFrameError(bytesOf(0xdd, 0xff, 0xff, 0xff, 0xff), /count exceeds/); // 4 billion items promised
    assertFrameError(bytesOf(0xdb, 0xff, 0xff, 0xff, 0xff, 0x41), /truncated/);
  });

  test('nesting is bounded without recursion', () => {
    assert.deepEqual(decodeFrame(nestedArrays(MAX_FRAME_DEPTH)), JSON.parse('['.repeat(MAX_FRAME_DEPTH) + '1' + ']'.repeat(MAX_FRAME_DEPTH)));
    assertFrameError(nestedArrays(MAX_FRAME_DEPTH + 1), /nesting/);
    assertFrameError(nestedArrays(1_000_000), /nesting/);
  });

  test('maxBytes refuses large frames with FRAME_TOO_LARGE', () => {
    const bytes = encodeFrame({ blob: new Uint8Array(1000) });
    assert.throws(
      () => decodeFrame(bytes, { maxBytes: 100 }),
      (err: unknown) => err instanceof FrameError && err.code === 'FRAME_TOO_LARGE',
    );
    assert.ok(decodeFrame(bytes, { maxBytes: 2000 }));
  });

  describe('fuzz: decodeFrame never throws anything but FrameError', () => {
    const decodeOrFrameError = (bytes: Uint8Array): void => {
      try {
        decodeFrame(bytes);
      } catch (err) {
        if (!(err instanceof FrameError)) throw err;
      }
    };

    test('random bytes', () => {
      fc.assert(fc.property(fc.uint8Array({ maxLength: 256 }), decodeOrFrameError), { numRuns: 3000 });
    });

    test('mutated valid frames', () => {
      const valid = fc
        .record({ id: fc.nat(), op: fc.constantFrom('acquire', 'put', 'keepAlive'), name: fc.string(), value: fc.uint8Array(), n: fc.integer(), deep: fc.jsonValue({ maxDepth: 4 }) })
        .map((f) => encodeFrame(f));
      const mutation = fc.array(fc.record({ at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) }), { minLength: 1, maxLength: 8 });
      fc.assert(
        fc.property(valid, mutation, fc.nat(), (bytes, edits, cut) => {
          const mutated = Uint8Array.from(bytes);
          for (const e of edits) mutated[e.at % mutated.length] = e.byte;
          decodeOrFrameError(mutated);
          decodeOrFrameError(mutated.subarray(0, cut % (mutated.length + 1)));
        }),
        { numRuns: 3000 },
      );
    });

    test('hostile headers: huge counts, huge lengths, deep nesting', () => {
      const header = fc.constantFrom(0xdc, 0xdd, 0xde, 0xdf, 0xc6, 0xdb, 0xc5, 0xda, 0x9f, 0x8f, 0x91, 0x81);
      fc.assert(
        fc.property(fc.array(header, { minLength: 1, maxLength: 200 }), fc.uint8Array({ maxLength: 32 }), (headers, tail) => {
          const parts: number[] = [];
          for (const h of headers) {
            parts.push(h);
            if (h === 0xdc || h === 0xde || h === 0xc5 || h === 0xda) parts.push(0xff, 0xff);
            if (h === 0xdd || h === 0xdf || h === 0xc6 || h === 0xdb) parts.push(0x7f, 0xff, 0xff, 0xff);
          }
          decodeOrFrameError(Uint8Array.from([...parts, ...tail]));
        }),
        { numRuns: 2000 },
      );
    });
  });
});
