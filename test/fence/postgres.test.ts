// PostgresFence against a real PostgreSQL server that this file starts and removes.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import type pg from 'pg';
import { FenceGuard, FenceInputError, MAX_TOKEN, StaleTokenError } from '../../src/fence/index.js';
import { PostgresFence } from '../../src/fence/postgres.js';
import { poolFor, usePostgres } from '../support/postgres.js';

let pool: pg.Pool;
let fence: PostgresFence;

usePostgres({
  // Commit timestamps give the history check an order of commits that the server records
  // itself, independent of the locking under test.
  settings: { track_commit_timestamp: 'on' },
  setup: async (server) => {
    pool = poolFor(server, { max: 20 });
    fence = new PostgresFence(pool);
    await fence.migrate();
  },
  teardown: async () => {
    await pool.end();
  },
});

async function rejection(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => assert.fail('expected a rejection'),
    (e: unknown) => e,
  );
}

function gate(): { wait: Promise<void>; open: () => void } {
  let open!: () => void;
  const wait = new Promise<void>((resolve) => (open = resolve));
  return { wait, open };
}

async function makeRegister(table: string): Promise<void> {
  await pool.query(`DROP TABLE IF EXISTS ${table}`);
  await pool.query(`CREATE TABLE ${table} (id int PRIMARY KEY, value text NOT NULL)`);
  await pool.query(`INSERT INTO ${table} VALUES (1, 'initial')`);
}

async function readRegister(table: string): Promise<string> {
  const r = await pool.query<{ value: string }>(`SELECT value FROM ${table} WHERE id = 1`);
  return r.rows[0]!.value;
}

describe('schema', () => {
  test('fenceSql is the documented statement and validates the table name', () => {
    const sql = PostgresFence.fenceSql();
    assert.match(sql, /CREATE TABLE IF NOT EXISTS "palisade_fence"/);
    assert.match(sql, /token numeric\(20,0\)/);
    assert.match(PostgresFence.fenceSql('locks.fence'), /"locks"\."fence"/);
    const doc = readFileSync(new URL('../../docs/fencing.md', import.meta.url), 'utf8');
    assert.ok(doc.includes(sql), 'docs/fencing.md must show the fence table SQL verbatim');
    for (const badName of ['', 'Fence', 'fence; DROP TABLE x', 'a.b.c', '1fence', 'fen"ce', 'x'.repeat(64)]) {
      assert.throws(() => PostgresFence.fenceSql(badName), FenceInputError, badName);
      assert.throws(() => new PostgresFence(pool, { table: badName }), FenceInputError, badName);
    }
  });

  test('the table is never created implicitly; migrate is explicit and idempotent', async () => {
    const other = new PostgresFence(pool, { table: 'fence_unmigrated' });
    const err = await rejection(other.write('r', 1, async () => 'never'));
    assert.match(String(err), /fence table fence_unmigrated does not exist: run PostgresFence\.migrate\(\)/);
    await Promise.all(Array.from({ length: 8 }, () => other.migrate()));
    await other.migrate();
    assert.equal(await other.write('r', 1, async () => 'done'), 'done');
  });
});

describe('write', () => {
  test('runs fn in the fenced transaction: equal and higher tokens pass, lower is refused before fn runs', async () => {
    await makeRegister('reg_basic');
    const put = (token: bigint | number | string, value: string): Promise<string> =>
      fence.write('basic', token, async (tx) => {
        await tx.query('UPDATE reg_basic SET value = $1 WHERE id = 1', [value]);
        return value;
      });
    assert.equal(await put(33, 'a'), 'a');
    assert.equal(await put('33', 'b'), 'b');
    assert.equal(await put(34n, 'c'), 'c');

    let ran = false;
    const err = await rejection(
      fence.write('basic', 33, async () => {
        ran = true;
      }),
    );
    assert.ok(err instanceof StaleTokenError);
    assert.equal(err.code, 'STALE_TOKEN');
    assert.equal(err.resource, 'basic');
    assert.equal(err.token, 33n);
    assert.equal(err.fence, 34n);
    assert.equal(ran, false);
    assert.equal(await readRegister('reg_basic'), 'c');
    assert.equal(await fence.current('basic'), 34n);
  });

  test('an error in fn rolls back both the write and the fence, and is rethrown unchanged', async () => {
    await makeRegister('reg_rollback');
    await fence.write('rollback', 5, async () => {});
    const boom = new Error('boom');
    const err = await rejection(
      fence.write('rollback', 9, async (tx) => {
        await tx.query(`UPDATE reg_rollback SET value = 'half' WHERE id = 1`);
        throw boom;
      }),
    );
    assert.equal(err, boom);
    assert.equal(await readRegister('reg_rollback'), 'initial');
    assert.equal(await fence.current('rollback'), 5n, 'a failed write must not raise the fence');
    // The client went back to the pool clean: the next write works.
    await fence.write('rollback', 6, async (tx) => tx.query(`UPDATE reg_rollback SET value = 'six' WHERE id = 1`));
    assert.equal(await readRegister('reg_rollback'), 'six');
  });

  test('a failed statement that fn swallows does not pass for a commit', async () => {
    await makeRegister('reg_swallow');
    const err = await rejection(
      fence.write('swallow', 1, async (tx) => {
        await tx.query(`UPDATE reg_swallow SET value = 'lost' WHERE id = 1`);
        await tx.query('SELECT 1/0').catch(() => {});
      }),
    );
    assert.match(String(err), /rolled back: a statement in it failed/);
    assert.equal(await readRegister('reg_swallow'), 'initial');
    assert.equal(await fence.current('swallow'), null);
  });

  test('tokens keep all 64 bits through the database', async () => {
    const top = MAX_TOKEN;
    const big = (1n << 63n) + 1n; // past bigint and past a double's precision
    await fence.write('wide', big, async () => {});
    assert.equal(await fence.current('wide'), big);
    const err = await rejection(fence.write('wide', big - 1n, async () => {}));
    assert.ok(err instanceof StaleTokenError);
    assert.equal(err.fence, big);
    await fence.write('wide', top.toString(), async () => {});
    assert.equal(await fence.current('wide'), top);
  });

  test('resource names are bound parameters, stored verbatim', async () => {
    const name = `x'); DROP TABLE palisade_fence; --"😀`;
    await fence.write(name, 3, async () => {});
    assert.equal(await fence.current(name), 3n);
    const rows = await pool.query<{ resource: string }>('SELECT resource FROM palisade_fence WHERE resource = $1', [name]);
    assert.equal(rows.rows[0]?.resource, name);
  });

  test('a holder inside its transaction keeps the fence: a higher token waits, then supersedes', async () => {
    await makeRegister('reg_block_hi');
    await fence.write('block-hi', 33, async () => {});
    const inside = gate();
    const release = gate();
    const order: string[] = [];
    const a = fence.write('block-hi', 33, async (tx) => {
      await tx.query(`UPDATE reg_block_hi SET value = 'A' WHERE id = 1`);
      inside.open();
      await release.wait;
      order.push('A commits');
    });
    await inside.wait;
    const b = fence.write('block-hi', 34, async (tx) => {
      order.push('B runs');
      await tx.query(`UPDATE reg_block_hi SET value = 'B' WHERE id = 1`);
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.deepEqual(order, [], 'B must wait for the fence row A holds');
    release.open();
    await Promise.all([a, b]);
    assert.deepEqual(order, ['A commits', 'B runs']);
    assert.equal(await readRegister('reg_block_hi'), 'B');
    assert.equal(await fence.current('block-hi'), 34n);
  });

  test('a holder inside its transaction keeps the fence: a lower token waits, then is refused', async () => {
    await makeRegister('reg_block_lo');
    const inside = gate();
    const release = gate();
    const a = fence.write('block-lo', 34, async (tx) => {
      await tx.query(`UPDATE reg_block_lo SET value = 'A' WHERE id = 1`);
      inside.open();
      await release.wait;
    });
    await inside.wait;
    let ran = false;
    const b = rejection(
      fence.write('block-lo', 33, async () => {
        ran = true;
      }),
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    release.open();
    await a;
    const err = await b;
    assert.ok(err instanceof StaleTokenError);
    assert.equal(err.fence, 34n);
    assert.equal(ran, false);
    assert.equal(await readRegister('reg_block_lo'), 'A');
  });

  test('16 concurrent writers x 50 writes, random tokens: commits are in token order, the highest token wins', async () => {
    const seed = Number(process.env['FENCE_SEED'] ?? Date.now() % 2 ** 31);
    let state = seed;
    const random = (): number => {
      state = (state + 0x6d2b79f5) | 0;
      let t = state;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
    await makeRegister('reg_many');
    await pool.query('DROP TABLE IF EXISTS history_many');
    await pool.query('CREATE TABLE history_many (seq serial PRIMARY KEY, token numeric(20,0) NOT NULL, value text NOT NULL)');

    const WRITERS = 16;
    const WRITES = 50;
    let highest = 0n;
    let committed = 0;
    let refused = 0;
    const writers = Array.from({ length: WRITERS }, async (_, w) => {
      for (let i = 0; i < WRITES; i++) {
        // Tokens drift upward with jitter, as grants of one lock do when holders keep
        // losing it: neighbours overlap all along, not only at the start.
        const token = BigInt(1 + i * 10 + Math.floor(random() * 100));
        if (token > highest) highest = token;
        const value = `w${w}#${i}@${token}`;
        const pause = random() < 0.25;
        try {
          await fence.write('many', token, async (tx) => {
            await tx.query('UPDATE reg_many SET value = $1 WHERE id = 1', [value]);
            // Widen the window between the fence and the commit, so that a fence which did
            // not hold its row until COMMIT would let writes cross.
            await new Promise<void>((resolve) => (pause ? setTimeout(resolve, 1) : setImmediate(resolve)));
            await tx.query('INSERT INTO history_many (token, value) VALUES ($1, $2)', [token.toString(), value]);
          });
          committed++;
        } catch (err) {
          assert.ok(err instanceof StaleTokenError, `seed ${seed}: ${String(err)}`);
          assert.ok(err.fence > err.token, `seed ${seed}: refused ${err.token} against fence ${err.fence}`);
          refused++;
        }
      }
    });
    await Promise.all(writers);
    assert.equal(committed + refused, WRITERS * WRITES);

    // The history in the order the server committed it.
    const history = await pool.query<{ token: string; value: string }>(
      'SELECT token::text AS token, value FROM history_many ORDER BY pg_xact_commit_timestamp(xmin), seq',
    );
    assert.equal(history.rows.length, committed, `seed ${seed}`);
    let max = 0n;
    for (const row of history.rows) {
      const token = BigInt(row.token);
      assert.ok(token >= max, `seed ${seed}: token ${token} committed after ${max}`);
      max = token;
    }
    assert.equal(max, highest, `seed ${seed}`);
    const final = await readRegister('reg_many');
    assert.equal(final, history.rows.at(-1)!.value, `seed ${seed}`);
    assert.ok(final.endsWith(`@${highest}`), `seed ${seed}: final ${final}, highest ${highest}`);
    assert.equal(await fence.current('many'), highest);
  });
});

describe('check, current and FenceGuard over PostgreSQL', () => {
  test('check raises or refuses; a FenceGuard can use the table as its store', async () => {
    await fence.check('checked', 10);
    await fence.check('checked', 10);
    const err = await rejection(fence.check('checked', 9));
    assert.ok(err instanceof StaleTokenError);
    assert.equal(err.fence, 10n);
    const guard = new FenceGuard(fence);
    await guard.check('checked', 11);
    await assert.rejects(guard.check('checked', 10), StaleTokenError);
    assert.equal(await guard.current('checked'), 11n);
    assert.equal(await guard.current('never-fenced'), null);
  });

  test('bad input is refused before any statement runs', async () => {
    const isInput = (e: unknown): boolean => e instanceof FenceInputError && e.code === 'INVALID_ARGUMENT';
    let ran = false;
    const fn = async (): Promise<void> => {
      ran = true;
    };
    await assert.rejects(fence.write('r', 1.5, fn), isInput);
    await assert.rejects(fence.write('r', -1, fn), isInput);
    await assert.rejects(fence.write('r', '12a', fn), isInput);
    await assert.rejects(fence.write('r', MAX_TOKEN + 1n, fn), isInput);
    await assert.rejects(fence.write('', 1, fn), isInput);
    await assert.rejects(fence.write('r'.repeat(513), 1, fn), isInput);
    await assert.rejects(fence.write('a\0b', 1, fn), isInput);
    await assert.rejects(fence.check('r', -1), isInput);
    await assert.rejects(fence.current('r'.repeat(513)), isInput);
    assert.equal(ran, false);
    const count = await pool.query<{ n: string }>(`SELECT count(*)::text AS n FROM palisade_fence WHERE resource = 'r'`);
    assert.equal(count.rows[0]?.n, '0');
  });
});

describe('the version-column pattern of docs/fencing.md', () => {
  const UPDATE_SQL = 'UPDATE accounts SET balance = $2, fence = $3 WHERE id = $1 AND fence <= $3';

  // The documented reading of the result: no row updated means the token is stale.
  async function setBalance(id: number, balance: number, token: bigint): Promise<void> {
    const r = await pool.query(UPDATE_SQL, [id, balance, token.toString()]);
    if (r.rowCount === 0) {
      const cur = await pool.query<{ fence: string }>('SELECT fence::text AS fence FROM accounts WHERE id = $1', [id]);
      throw new StaleTokenError(`accounts/${id}`, token, BigInt(cur.rows[0]!.fence));
    }
  }

  test('the documentation shows the statement this test runs', () => {
    const doc = readFileSync(new URL('../../docs/fencing.md', import.meta.url), 'utf8');
    assert.ok(doc.includes(UPDATE_SQL), 'docs/fencing.md must show the version-column UPDATE verbatim');
  });

  test('0 rows updated means stale; equal tokens pass', async () => {
    await pool.query('DROP TABLE IF EXISTS accounts');
    await pool.query('CREATE TABLE accounts (id int PRIMARY KEY, balance bigint NOT NULL, fence numeric(20,0) NOT NULL DEFAULT 0)');
    await pool.query('INSERT INTO accounts (id, balance) VALUES (1, 100)');
    await setBalance(1, 90, 33n);
    await setBalance(1, 80, 33n);
    await setBalance(1, 70, 34n);
    const err = await rejection(setBalance(1, 1_000_000, 33n));
    assert.ok(err instanceof StaleTokenError);
    assert.equal(err.fence, 34n);
    const row = await pool.query<{ balance: string; fence: string }>('SELECT balance::text, fence::text FROM accounts WHERE id = 1');
    assert.deepEqual(row.rows[0], { balance: '70', fence: '34' });
  });

  test('concurrent updates with random tokens leave the balance of the highest token', async () => {
    await pool.query('UPDATE accounts SET balance = 0, fence = 0 WHERE id = 1');
    const tokens = Array.from({ length: 200 }, (_, i) => BigInt(((i * 7919) % 500) + 1));
    const highest = tokens.reduce((a, b) => (a > b ? a : b));
    const results = await Promise.allSettled(tokens.map((t) => setBalance(1, Number(t) * 10, t)));
    for (const r of results) if (r.status === 'rejected') assert.ok(r.reason instanceof StaleTokenError);
    const row = await pool.query<{ balance: string; fence: string }>('SELECT balance::text, fence::text FROM accounts WHERE id = 1');
    assert.deepEqual(row.rows[0], { balance: String(Number(highest) * 10), fence: String(highest) });
  });
});
