import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  FenceGuard,
  FenceInputError,
  FenceUnavailableError,
  FencedRegister,
  MAX_RESOURCE_BYTES,
  MAX_TOKEN,
  MemoryFenceStore,
  StaleTokenError,
  checkResource,
  toToken,
  type FenceStore,
  type TokenInput,
} from '../../src/fence/index.js';

function isInputError(err: unknown): boolean {
  return err instanceof FenceInputError && err.code === 'INVALID_ARGUMENT';
}

describe('tokens', () => {
  test('numbers, bigints and digit strings normalise to the same bigint', () => {
    assert.equal(toToken(0), 0n);
    assert.equal(toToken(42), 42n);
    assert.equal(toToken(42n), 42n);
    assert.equal(toToken('42'), 42n);
    assert.equal(toToken('0042'), 42n);
    assert.equal(toToken(Number.MAX_SAFE_INTEGER), BigInt(Number.MAX_SAFE_INTEGER));
  });

  test('the whole unsigned 64-bit range is accepted without loss', () => {
    assert.equal(MAX_TOKEN, 18446744073709551615n);
    assert.equal(toToken('18446744073709551615'), MAX_TOKEN);
    assert.equal(toToken(MAX_TOKEN), MAX_TOKEN);
  });

  const bad: Array<[string, unknown]> = [
    ['a fraction', 1.5],
    ['NaN', Number.NaN],
    ['Infinity', Number.POSITIVE_INFINITY],
    ['a negative number', -1],
    ['a negative bigint', -1n],
    ['a negative string', '-1'],
    ['a decimal string', '1.0'],
    ['an empty string', ''],
    ['a padded string', ' 1'],
    ['a hex string', '0x10'],
    ['an exponent string', '1e3'],
    ['2^64 as a bigint', 1n << 64n],
    ['2^64 as a string', '18446744073709551616'],
    ['an unsafe number (may already be rounded)', 2 ** 53],
    ['null', null],
    ['undefined', undefined],
    ['an object', { token: 1 }],
  ];
  for (const [what, value] of bad) {
    test(`refuses ${what}`, () => {
      assert.throws(() => toToken(value as TokenInput), isInputError);
    });
  }
});

describe('resource names', () => {
  test(`accept up to ${MAX_RESOURCE_BYTES} bytes of UTF-8`, () => {
    assert.equal(checkResource('a'.repeat(MAX_RESOURCE_BYTES)).length, MAX_RESOURCE_BYTES);
    assert.equal(checkResource('€'.repeat(170)).length, 170); // 510 bytes
    assert.equal(checkResource('lock/🔒'), 'lock/🔒');
  });

  test('refuse empty, over-long (counted in bytes), NUL and lone surrogates', () => {
    assert.throws(() => checkResource(''), isInputError);
    assert.throws(() => checkResource('a'.repeat(MAX_RESOURCE_BYTES + 1)), /513 bytes; the limit is 512/);
    assert.throws(() => checkResource('€'.repeat(171)), isInputError); // 171 chars, 513 bytes
    assert.throws(() => checkResource('a\0b'), isInputError);
    assert.throws(() => checkResource('a\uD800b'), isInputError);
    assert.throws(() => checkResource(7 as unknown as string), isInputError);
  });
});

describe('MemoryFenceStore', () => {
  test('raise accepts equal or higher tokens and refuses lower ones', async () => {
    const store = new MemoryFenceStore();
    assert.equal(await store.current('r'), null);
    assert.deepEqual(await store.raise('r', 33n), { accepted: true, fence: 33n });
    assert.deepEqual(await store.raise('r', 33n), { accepted: true, fence: 33n });
    assert.deepEqual(await store.raise('r', 32n), { accepted: false, fence: 33n });
    assert.deepEqual(await store.raise('r', 40n), { accepted: true, fence: 40n });
    assert.equal(await store.current('r'), 40n);
    assert.equal(await store.current('other'), null);
  });
});

describe('FenceGuard', () => {
  test('defaults to a memory store and rejects a stale token with its fence', async () => {
    const guard = new FenceGuard();
    await guard.check('orders', 33);
    await guard.check('orders', '33'); // one holder, many writes
    await guard.check('orders', 34n);
    const err = await guard.check('orders', 33).then(
      () => assert.fail('a stale token was accepted'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof StaleTokenError);
    assert.ok(err instanceof Error);
    assert.equal(err.code, 'STALE_TOKEN');
    assert.equal(err.resource, 'orders');
    assert.equal(err.token, 33n);
    assert.equal(err.fence, 34n);
    assert.equal(await guard.current('orders'), 34n);
  });

  test('each resource has its own fence', async () => {
    const guard = new FenceGuard(new MemoryFenceStore());
    await guard.check('a', 100);
    await guard.check('b', 1);
    assert.equal(await guard.current('a'), 100n);
    assert.equal(await guard.current('b'), 1n);
  });

  test('bad input rejects with FenceInputError and leaves the fence alone', async () => {
    const guard = new FenceGuard();
    await guard.check('r', 5);
    await assert.rejects(guard.check('r', 5.5), isInputError);
    await assert.rejects(guard.check('r', -6), isInputError);
    await assert.rejects(guard.check('r', '1'.repeat(21)), isInputError);
    await assert.rejects(guard.check('', 6), isInputError);
    await assert.rejects(guard.check('x'.repeat(MAX_RESOURCE_BYTES + 1), 6), isInputError);
    await assert.rejects(guard.current(''), isInputError);
    assert.equal(await guard.current('r'), 5n);
  });

  test('passes through the errors of its store', async () => {
    const down: FenceStore = {
      raise: async () => {
        throw new FenceUnavailableError('store is down');
      },
      current: async () => {
        throw new FenceUnavailableError('store is down');
      },
    };
    const guard = new FenceGuard(down);
    await assert.rejects(guard.check('r', 1), (e: unknown) => e instanceof FenceUnavailableError && e.code === 'UNAVAILABLE');
    await assert.rejects(guard.current('r'), FenceUnavailableError);
  });

  test('a check does not protect a separate write: the race the write-shaped APIs close', async () => {
    const guard = new FenceGuard();
    let stored = 'initial';
    // A holds token 33, checks, and is paused before its write.
    await guard.check('doc', 33);
    // A's lease expires; B is granted 34, checks and writes.
    await guard.check('doc', 34);
    stored = 'written by B (34)';
    // A resumes and writes on the strength of its earlier check.
    stored = 'written by A (33)';
    assert.equal(stored, 'written by A (33)', 'check-then-write lets the stale holder win');

    // The same schedule against a write-shaped API: the stale write is refused.
    const register = new FencedRegister('initial', 'doc');
    register.write(34, 'written by B (34)');
    assert.throws(() => register.write(33, 'written by A (33)'), StaleTokenError);
    assert.equal(register.value, 'written by B (34)');
  });
});

describe('FencedRegister', () => {
  test('write stores value and fence; stale writes change nothing', () => {
    const register = new FencedRegister<number>(0, 'counter');
    assert.deepEqual(register.read(), { value: 0, fence: null });
    register.write(10, 1);
    register.write(10, 2);
    register.write('12', 3);
    assert.deepEqual(register.read(), { value: 3, fence: 12n });
    assert.throws(
      () => register.write(11n, 4),
      (e: unknown) => e instanceof StaleTokenError && e.resource === 'counter' && e.token === 11n && e.fence === 12n,
    );
    assert.throws(() => register.write(-1, 5), isInputError);
    assert.deepEqual(register.read(), { value: 3, fence: 12n });
  });

  test('interleaved async writers: final value is the highest token, history never goes down', async () => {
    let seed = 0x5eed;
    const random = (): number => {
      // mulberry32: deterministic, so a failure replays
      seed = (seed + 0x6d2b79f5) | 0;
      let t = seed;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
    const register = new FencedRegister<string>('none', 'shared');
    const committed: bigint[] = [];
    let highest = -1n;
    const writers = Array.from({ length: 16 }, async (_, w) => {
      for (let i = 0; i < 50; i++) {
        const token = BigInt(1 + Math.floor(random() * 400));
        if (token > highest) highest = token;
        await new Promise<void>((resolve) => setImmediate(resolve));
        try {
          register.write(token, `${w}:${i}:${token}`);
          committed.push(token);
        } catch (err) {
          assert.ok(err instanceof StaleTokenError);
          assert.ok(err.fence > token);
        }
      }
    });
    await Promise.all(writers);
    for (let i = 1; i < committed.length; i++) assert.ok(committed[i]! >= committed[i - 1]!);
    assert.equal(register.fence, highest);
    assert.ok(register.value.endsWith(`:${highest}`));
  });
});
