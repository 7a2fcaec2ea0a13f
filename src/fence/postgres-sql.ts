// The SQL of the PostgreSQL fence, in one place so that migrate(), `palisade fence-sql`
// and docs/fencing.md show the same statements.
import { FenceInputError } from './errors.js';
import { MAX_RESOURCE_BYTES, MAX_TOKEN } from './input.js';

export const DEFAULT_FENCE_TABLE = 'palisade_fence';

// Lower-case only: an identifier is quoted when used, and quoting preserves case, so
// allowing "Fence" would make a table that unquoted SQL in psql could not find.
const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/;

/** Validates `table` (optionally `schema.table`) and returns it quoted for use in SQL. */
export function quoteTableName(table: string): string {
  if (typeof table !== 'string') throw new FenceInputError('fence table name must be a string');
  const parts = table.split('.');
  if (parts.length > 2 || !parts.every((p) => IDENTIFIER.test(p))) {
    throw new FenceInputError(
      `fence table name ${JSON.stringify(table)} is not a plain lower-case identifier ` +
        '(letters a-z, digits, underscore; at most 63 characters; optionally schema-qualified)',
    );
  }
  return parts.map((p) => `"${p}"`).join('.');
}

/** The statements that create the fence table: one row per resource, holding its fence. */
export function fenceTableSql(table: string = DEFAULT_FENCE_TABLE): string {
  const t = quoteTableName(table);
  // numeric(20,0) holds every unsigned 64-bit token; bigint stops at 2^63 - 1.
  return `CREATE TABLE IF NOT EXISTS ${t} (
  resource text PRIMARY KEY CHECK (octet_length(resource) BETWEEN 1 AND ${MAX_RESOURCE_BYTES}),
  token numeric(20,0) NOT NULL CHECK (token BETWEEN 0 AND ${MAX_TOKEN})
);
`;
}

/**
 * Raise the fence of $1 to $2 unless it is higher. ON CONFLICT DO UPDATE locks the existing
 * row even when the WHERE refuses the update, so within a transaction the fence cannot move
 * until COMMIT or ROLLBACK: the writes that follow are ordered by token. Zero rows returned
 * means refused. Tokens travel as text both ways so no type parser can round them.
 */
export function raiseSql(table: string): string {
  const t = quoteTableName(table);
  return `INSERT INTO ${t} AS f (resource, token) VALUES ($1, $2::numeric)
ON CONFLICT (resource) DO UPDATE SET token = EXCLUDED.token WHERE f.token <= EXCLUDED.token
RETURNING f.token::text AS token`;
}

export function currentSql(table: string): string {
  return `SELECT token::text AS token FROM ${quoteTableName(table)} WHERE resource = $1`;
}
