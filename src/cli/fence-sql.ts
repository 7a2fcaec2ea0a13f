// `palisade fence-sql [--table T]`: the SQL that creates the PostgreSQL fence table, for
// deploys that apply schema changes themselves instead of calling PostgresFence.migrate().
import type { Command } from 'commander';
import { FenceInputError } from '../fence/errors.js';
import { PostgresFence } from '../fence/postgres.js';

export function fenceSqlCommand(o: { table?: string }): number {
  try {
    process.stdout.write(o.table === undefined ? PostgresFence.fenceSql() : PostgresFence.fenceSql(o.table));
    return 0;
  } catch (e) {
    if (!(e instanceof FenceInputError)) throw e;
    process.stderr.write(`palisade: ${e.message}\n`);
    return 64;
  }
}

export function registerFenceSql(program: Command): void {
  program
    .command('fence-sql')
    .description('print the SQL that creates the PostgreSQL fence table (what PostgresFence.migrate() runs)')
    .option('--table <name>', 'table name, optionally schema-qualified; lower-case identifiers (default palisade_fence)')
    .addHelpText('after', '\nExample: palisade fence-sql --table ops.fence | psql "$DATABASE_URL"')
    .action((o: { table?: string }) => {
      process.exitCode = fenceSqlCommand(o);
    });
}
