// The paused-holder story's resource in PostgreSQL: one row of a table, written only inside
// PostgresFence.write, so the fence check and the UPDATE commit (or roll back) together.
//
//   CREATE TABLE <table> (id text PRIMARY KEY, value text NOT NULL)   -- one row: id = resource
//
// Client A receives the spec as JSON on its command line and opens its own pool.
import pg from 'pg';
import { PostgresFence } from '../../src/fence/postgres.js';
import { outcomeOfError, type FencedResource, type ResourceWriter, type WriteOutcome } from './resource.js';

export interface PostgresResourceSpec {
  kind: 'postgres';
  connectionString: string;
  /** The table that holds the row (a plain lower-case identifier). Default story_register. */
  table?: string;
  /** The row's id, which is also the fenced resource's name. Default report. */
  resource?: string;
  /** The fence table (PostgresFence's option). Default palisade_fence. */
  fenceTable?: string;
}

const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/;

function resolved(spec: PostgresResourceSpec): Required<PostgresResourceSpec> {
  const table = spec.table ?? 'story_register';
  if (!IDENTIFIER.test(table)) throw new Error(`table ${JSON.stringify(table)} is not a plain lower-case identifier`);
  return { ...spec, table, resource: spec.resource ?? 'report', fenceTable: spec.fenceTable ?? 'palisade_fence' };
}

function poolOf(connectionString: string): pg.Pool {
  const pool = new pg.Pool({ connectionString, max: 2 });
  pool.on('error', () => {}); // an idle client that fails is replaced at the next checkout
  return pool;
}

/** The fenced write both holders make: UPDATE the row inside the fence's transaction. */
async function fencedWrite(fence: PostgresFence, s: Required<PostgresResourceSpec>, token: number, value: string): Promise<WriteOutcome> {
  try {
    await fence.write(s.resource, token, async (tx) => {
      await tx.query(`UPDATE ${s.table} SET value = $2 WHERE id = $1`, [s.resource, value]);
    });
    return { status: 200, body: { accepted: true } };
  } catch (e) {
    return outcomeOfError(e);
  }
}

/**
 * The story's side: creates the fence table and the row table (with the row set to
 * '(empty)'), and returns the resource. Its pool is its own; close() ends it.
 */
export async function postgresResource(spec: Omit<PostgresResourceSpec, 'kind'>): Promise<FencedResource> {
  const s = resolved({ ...spec, kind: 'postgres' });
  const pool = poolOf(s.connectionString);
  const fence = new PostgresFence(pool, { table: s.fenceTable });
  try {
    await fence.migrate();
    await pool.query(`CREATE TABLE IF NOT EXISTS ${s.table} (id text PRIMARY KEY, value text NOT NULL)`);
    await pool.query(`INSERT INTO ${s.table} (id, value) VALUES ($1, '(empty)') ON CONFLICT (id) DO UPDATE SET value = '(empty)'`, [s.resource]);
  } catch (e) {
    await pool.end();
    throw e;
  }
  return {
    spec: JSON.stringify(s),
    label: `row ${JSON.stringify(s.resource)} of table ${s.table} in PostgreSQL`,
    write: (token, value) => fencedWrite(fence, s, token, value),
    read: async () => {
      const r = await pool.query<{ value: string }>(`SELECT value FROM ${s.table} WHERE id = $1`, [s.resource]);
      return { value: r.rows[0]?.value ?? '(no row)', fence: String(await fence.current(s.resource)) };
    },
    close: () => pool.end(),
  };
}

/** Client A's side, from the JSON spec. */
export function openPostgresWriter(json: string): ResourceWriter {
  const s = resolved(JSON.parse(json) as PostgresResourceSpec);
  const pool = poolOf(s.connectionString);
  const fence = new PostgresFence(pool, { table: s.fenceTable });
  return { write: (token, value) => fencedWrite(fence, s, token, value), close: () => pool.end() };
}
