// PostgresFence when the database is not there or goes away: a typed error, nothing written.
import assert from 'node:assert/strict';
import { connect, createServer, type Server } from 'node:net';
import { describe, test } from 'node:test';
import pg from 'pg';
import { FenceUnavailableError } from '../../src/fence/index.js';
import { PostgresFence } from '../../src/fence/postgres.js';
import { poolFor, usePostgres } from '../support/postgres.js';

function unavailable(maybeCommitted = false) {
  return (e: unknown): boolean => {
    assert.ok(e instanceof FenceUnavailableError, `expected FenceUnavailableError, got ${String(e)}`);
    assert.equal(e.code, 'UNAVAILABLE');
    assert.equal(e.maybeCommitted, maybeCommitted);
    assert.ok(e.cause !== undefined, 'the driver error is kept as cause');
    return true;
  };
}

async function unusedPort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === 'object' && address ? address.port : 1));
    });
  });
}

describe('a database that is not there', () => {
  test('over TCP: every operation rejects with FenceUnavailableError and fn never runs', async () => {
    const pool = new pg.Pool({ host: '127.0.0.1', port: await unusedPort(), user: 'nobody', database: 'none' });
    pool.on('error', () => {});
    const fence = new PostgresFence(pool);
    let ran = false;
    await assert.rejects(
      fence.write('r', 1, async () => {
        ran = true;
      }),
      unavailable(),
    );
    await assert.rejects(fence.check('r', 1), unavailable());
    await assert.rejects(fence.current('r'), unavailable());
    await assert.rejects(fence.migrate(), unavailable());
    const err = await fence.write('r', 1, async () => {}).catch((e: unknown) => e);
    assert.match(String((err as Error).message), /ECONNREFUSED.*nothing was written/);
    assert.equal(ran, false);
    await pool.end();
  });

  test('over a unix socket that does not exist', async () => {
    const pool = new pg.Pool({ host: '/nonexistent-palisade-socket-dir', user: 'nobody', database: 'none' });
    pool.on('error', () => {});
    await assert.rejects(new PostgresFence(pool).write('r', 1, async () => {}), unavailable());
    await pool.end();
  });
});

describe('a database that goes away', () => {
  const db = usePostgres();

  async function readState(): Promise<{ value: string; fence: string }> {
    const pool = poolFor(db.server, { max: 1 });
    try {
      const r = await pool.query<{ value: string; fence: string }>(
        `SELECT value, (SELECT token::text FROM palisade_fence WHERE resource = 'doc') AS fence FROM doc WHERE id = 1`,
      );
      return r.rows[0]!;
    } finally {
      await pool.end();
    }
  }

  test('stopping mid-transaction: FenceUnavailableError, and after restart neither the write nor the fence moved', async () => {
    const setup = poolFor(db.server);
    await new PostgresFence(setup).migrate();
    await setup.query(`CREATE TABLE doc (id int PRIMARY KEY, value text NOT NULL)`);
    await setup.query(`INSERT INTO doc VALUES (1, 'initial')`);
    await new PostgresFence(setup).write('doc', 1, (tx) => tx.query(`UPDATE doc SET value = 'one' WHERE id = 1`));
    await setup.end();

    const pool = poolFor(db.server);
    const fence = new PostgresFence(pool);
    let resume!: () => void;
    const paused = new Promise<void>((resolve) => (resume = resolve));
    let updated!: () => void;
    const inside = new Promise<void>((resolve) => (updated = resolve));
    const write = fence.write('doc', 2, async (tx) => {
      await tx.query(`UPDATE doc SET value = 'two' WHERE id = 1`);
      updated();
      await paused; // the server stops here, with the transaction open
    });
    await inside;
    await db.server.stop();
    resume();
    await assert.rejects(write, unavailable(false));

    // While it is down: refused the same way, nothing attempted.
    await assert.rejects(fence.write('doc', 3, async () => assert.fail('fn ran without a database')), unavailable());

    await db.server.start();
    assert.deepEqual(await readState(), { value: 'one', fence: '1' });

    // The same pool recovers once the server is back.
    await fence.write('doc', 3, (tx) => tx.query(`UPDATE doc SET value = 'three' WHERE id = 1`));
    assert.deepEqual(await readState(), { value: 'three', fence: '3' });
    await pool.end();
  });

  test('a statement of fn that meets the outage surfaces as FenceUnavailableError too', async () => {
    const pool = poolFor(db.server);
    const fence = new PostgresFence(pool);
    let resume!: () => void;
    const paused = new Promise<void>((resolve) => (resume = resolve));
    let raised!: () => void;
    const inside = new Promise<void>((resolve) => (raised = resolve));
    const write = fence.write('doc', 4, async (tx) => {
      raised();
      await paused;
      await tx.query(`UPDATE doc SET value = 'four' WHERE id = 1`);
    });
    await inside;
    await db.server.stop();
    resume();
    await assert.rejects(write, unavailable(false));
    await db.server.start();
    assert.deepEqual(await readState(), { value: 'three', fence: '3' });
    await pool.end();
  });
  test('a connection lost during COMMIT is reported as maybeCommitted: here the commit did land', async () => {
    // A TCP relay to the real server that forwards COMMIT and then cuts the connection
    // before the reply: the client cannot know the outcome, and must not claim either.
    const COMMIT = Buffer.from('COMMIT\0');
    let cutAfterCommit = false;
    const relay: Server = createServer((downstream) => {
      const upstream = connect(db.server.port, db.server.host);
      let committing = false;
      downstream.on('data', (chunk: Buffer) => {
        if (cutAfterCommit && chunk.includes(COMMIT)) committing = true;
        upstream.write(chunk);
      });
      upstream.on('data', (chunk: Buffer) => {
        if (committing) {
          downstream.destroy();
          upstream.destroy();
        } else downstream.write(chunk);
      });
      downstream.on('error', () => upstream.destroy());
      upstream.on('error', () => downstream.destroy());
      downstream.on('close', () => upstream.destroy());
      upstream.on('close', () => downstream.destroy());
    });
    await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
    const address = relay.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    const pool = new pg.Pool({ ...db.server.poolConfig(), port });
    pool.on('error', () => {});
    try {
      const fence = new PostgresFence(pool);
      cutAfterCommit = true;
      await assert.rejects(
        fence.write('doc', 5, (tx) => tx.query(`UPDATE doc SET value = 'five' WHERE id = 1`)),
        unavailable(true),
      );
      assert.deepEqual(await readState(), { value: 'five', fence: '5' });
    } finally {
      await pool.end();
      await new Promise<void>((resolve) => relay.close(() => resolve()));
    }
  });
});
