// `palisade fence-sql [--table T]`: the SQL that creates the PostgreSQL fence table, for
// deploys that apply schema changes themselves instead of calling PostgresFence.migrate().
import type { Command } from 'commander';

export async function fenceSqlCommand(o: { table?: string }): Promise<number> {
  // Loaded here, not at start-up: only this command needs the fence module.
  const [{ FenceInputError }, { PostgresFence }] = await Promise.all([import('../fence/errors.js'), import('../fence/postgres.js')]);
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
    .action(async (o: { table?: string }) => {
      process.exitCode = await fenceSqlCommand(o);
    });
}
