// palisade-server/fence-postgres: fencing for data that lives in PostgreSQL. The check and the
// caller's writes run in one transaction that holds the fence row locked until COMMIT,
// which closes the check-then-write race a bare check leaves open.
//
// pg is imported for its types only: the pool is the caller's, so loading this module never
// requires pg, and any pg 8 pool works.
import type { Pool, PoolClient, QueryResult, QueryResultRow } from 'pg';
import { FenceUnavailableError, StaleTokenError } from './errors.js';
import { checkResource, toToken, type TokenInput } from './input.js';
import { describe, isConnectionFailure } from './postgres-errors.js';
import { DEFAULT_FENCE_TABLE, currentSql, fenceTableSql, quoteTableName, raiseSql } from './postgres-sql.js';
import type { FenceStore, RaiseResult } from './store.js';

export interface PostgresFenceOptions {
  /** The fence table, optionally schema-qualified; lower-case identifiers only. Default palisade_fence. */
  table?: string;
}

interface TokenRow extends QueryResultRow {
  token: string;
}

const UNDEFINED_TABLE = '42P01';

/**
 * A fence kept in a PostgreSQL table, one row per resource. Use `write` to fence writes to
 * data in the same database; it also serves as the FenceStore of a FenceGuard.
 *
 * The pool is the caller's: give it an 'error' listener (pg emits errors of idle clients
 * there) and, so that a holder that dies mid-transaction cannot hold the fence row locked
 * for long, consider `idle_in_transaction_session_timeout` and `lock_timeout` for its role.
 */
export class PostgresFence implements FenceStore {
  readonly table: string;
  readonly #pool: Pool;
  readonly #raiseSql: string;
  readonly #currentSql: string;

  constructor(pool: Pool, opts: PostgresFenceOptions = {}) {
    this.table = opts.table ?? DEFAULT_FENCE_TABLE;
    quoteTableName(this.table); // fail at construction, not at the first write
    this.#pool = pool;
    this.#raiseSql = raiseSql(this.table);
    this.#currentSql = currentSql(this.table);
  }

  /** The SQL that creates the fence table (what migrate() runs and `palisade fence-sql` prints). */
  static fenceSql(table: string = DEFAULT_FENCE_TABLE): string {
    return fenceTableSql(table);
  }

  /** Creates the fence table if it does not exist. Never run implicitly: call it at deploy time. */
  async migrate(): Promise<void> {
    const client = await this.#connect();
    let broken = false;
    try {
      await client.query('BEGIN');
      // Concurrent CREATE TABLE IF NOT EXISTS can still collide in the system catalogs, so
      // migrators of one table take turns.
      await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`palisade migrate ${this.table}`]);
      await client.query(fenceTableSql(this.table));
      await client.query('COMMIT');
    } catch (err) {
      broken = isConnectionFailure(err);
      if (!broken) await client.query('ROLLBACK').catch(() => (broken = true));
      // The same statements applied by hand at the same moment (palisade fence-sql) can
      // still collide; the table exists either way, which is all migrate promises.
      const code = (err as { code?: unknown }).code;
      if (code === '42P07' || code === '42710' || code === '23505') return;
      throw this.#translate(err, false);
    } finally {
      client.release(broken ? true : undefined);
    }
  }

  /**
   * Runs `fn` in one transaction fenced by `token`: first raises the fence of `resource` to
   * `token` (refusing with StaleTokenError if it is higher, before `fn` runs), then `fn`
   * issues its statements on `tx`, then COMMIT. The fence row stays locked until COMMIT, so
   * a holder with a higher token waits for this transaction and then supersedes it, and a
   * lower one is refused: writes to the resource commit in token order.
   *
   * Any error rolls the whole transaction back, and is rethrown unchanged, except a lost or
   * refused connection, which becomes FenceUnavailableError (its `maybeCommitted` is true
   * only when the connection was lost during COMMIT). `fn` must not end the transaction
   * itself; it may use savepoints. If `fn` swallows a failed statement, PostgreSQL turns
   * the COMMIT into a rollback and write rejects rather than report success.
   */
  async write<T>(resource: string, token: TokenInput, fn: (tx: PoolClient) => Promise<T>): Promise<T> {
    const name = checkResource(resource);
    const t = toToken(token);
    const client = await this.#connect();

    // A checked-out pg client has no 'error' listener of the pool's; without one, a server
    // that goes away while `fn` awaits something else would crash the process.
    let lost: unknown;
    const onError = (err: Error): void => {
      lost ??= err;
    };
    client.on('error', onError);

    let inTransaction = false;
    let committing = false;
    let lostBeforeCommit = false;
    let broken = false;
    try {
      inTransaction = true;
      await client.query('BEGIN');
      const raised = await this.#query<TokenRow>(client, this.#raiseSql, [name, t.toString()]);
      if (raised.rowCount === 0) {
        // Refused; the row is locked by us, so the fence we read is the one that refused.
        const fence = await this.#readFence(client, name);
        inTransaction = false;
        await client.query('ROLLBACK');
        throw new StaleTokenError(name, t, fence ?? t);
      }
      const result = await fn(client);
      lostBeforeCommit = lost !== undefined;
      committing = true;
      inTransaction = false;
      const done = await client.query('COMMIT');
      // COMMIT of a transaction aborted by an earlier (swallowed) error reports ROLLBACK.
      if (done.command !== 'COMMIT') {
        throw new Error(
          `fenced write to ${JSON.stringify(name)} was rolled back: a statement in it failed and the error was not rethrown`,
        );
      }
      return result;
    } catch (err) {
      const unavailable = err instanceof FenceUnavailableError || isConnectionFailure(err);
      if (unavailable || lost !== undefined) broken = true;
      // On a broken connection there is nothing to roll back: releasing it closes the
      // session, and the server aborts the open transaction.
      if (inTransaction && !broken) {
        try {
          await client.query('ROLLBACK');
        } catch {
          broken = true;
        }
      }
      if (unavailable) throw this.#translate(err, committing && !lostBeforeCommit);
      throw err;
    } finally {
      client.removeListener('error', onError);
      // A client whose connection failed must not go back to the pool.
      client.release(broken ? true : undefined);
    }
  }

  /**
   * Raises the fence of `resource` to `token` in a statement of its own, or rejects with
   * StaleTokenError. Like FenceGuard.check, it does not protect a write made afterwards:
   * prefer write().
   */
  async check(resource: string, token: TokenInput): Promise<void> {
    const name = checkResource(resource);
    const t = toToken(token);
    const { accepted, fence } = await this.raise(name, t);
    if (!accepted) throw new StaleTokenError(name, t, fence);
  }

  /** FenceStore.raise: one autocommit statement, plus a read of the fence when refused. */
  async raise(resource: string, token: bigint): Promise<RaiseResult> {
    const name = checkResource(resource);
    const t = toToken(token);
    const raised = await this.#query<TokenRow>(this.#pool, this.#raiseSql, [name, t.toString()]);
    if (raised.rowCount !== 0) return { accepted: true, fence: t };
    // Fences only grow, so whatever we read now is still higher than the refused token.
    const fence = await this.#readFence(this.#pool, name);
    return { accepted: false, fence: fence ?? t };
  }

  /** The highest token accepted for `resource`, or null when none has been. */
  async current(resource: string): Promise<bigint | null> {
    return this.#readFence(this.#pool, checkResource(resource));
  }

  async #readFence(on: Pool | PoolClient, resource: string): Promise<bigint | null> {
    const r = await this.#query<TokenRow>(on, this.#currentSql, [resource]);
    const row = r.rows[0];
    return row === undefined ? null : BigInt(row.token);
  }

  async #connect(): Promise<PoolClient> {
    try {
      return await this.#pool.connect();
    } catch (err) {
      throw this.#translate(err, false);
    }
  }

  // Runs one of our own statements, translating failures that are about the fence itself.
  async #query<R extends QueryResultRow>(on: Pool | PoolClient, sql: string, values: string[]): Promise<QueryResult<R>> {
    try {
      return await on.query<R>(sql, values);
    } catch (err) {
      throw this.#translate(err, false);
    }
  }

  #translate(err: unknown, maybeCommitted: boolean): unknown {
    if (err instanceof FenceUnavailableError || err instanceof StaleTokenError) return err;
    if (isConnectionFailure(err)) {
      const outcome = maybeCommitted
        ? 'the connection was lost during COMMIT, so the write may or may not have committed (never partly)'
        : 'nothing was written';
      return new FenceUnavailableError(`PostgreSQL fence is unavailable (${describe(err)}); ${outcome}`, {
        cause: err,
        maybeCommitted,
      });
    }
    if ((err as { code?: unknown }).code === UNDEFINED_TABLE) {
      return new Error(
        `fence table ${this.table} does not exist: run PostgresFence.migrate() or apply the SQL of \`palisade fence-sql\``,
        { cause: err },
      );
    }
    return err;
  }
}

export type { PoolClient } from 'pg';
export { StaleTokenError, FenceUnavailableError, FenceInputError } from './errors.js';
export type { TokenInput } from './input.js';
