// `palisade snapshot ...`: backups (save, inspect, restore) and log compaction. Each loads
// its implementation when it runs (start-up time): inspect and restore need no connection.
import { InvalidArgumentError, type Command } from 'commander';
import { rpcCredentials } from './credentials.js';
import { endpointsOption } from './options.js';

export function registerSnapshotCommands(program: Command, endpointsFrom: (opt: string | undefined) => string[]): void {
  // Backups and restores load their implementation when they run (start-up time).
  const backup = () => import('./backup.js');
  const snapshot = program.command('snapshot').description('backups (save, inspect, restore) and log compaction');
  snapshot
    .command('save')
    .description("write the cluster's state at a linearizable point to FILE (atomically, with a header and an HMAC under the cluster secret, written by the node); needs an admin token when auth is on")
    .argument('<file>', 'the backup file to write')
    .addOption(endpointsOption())
    .action(async (file: string, o: { endpoints?: string }) => (await backup()).saveCommand(file, endpointsFrom(o.endpoints)));
  snapshot
    .command('inspect')
    .description('print what a backup holds (locks, sessions, elections, keys, highest token); refuses a damaged file, and with --config one its cluster did not write')
    .argument('<file>', 'the backup file')
    .option('--config <file>', "the config of the cluster that wrote it: its secret checks the file's HMAC (without it, only the structure is checked)")
    .option('--json', 'print JSON')
    .option('--limit <n>', 'rows shown per table', wholeNumber, 50)
    .action(async (file: string, o: { json?: boolean; limit: number; config?: string }) => (await backup()).inspectCommand(file, o));
  snapshot
    .command('restore')
    .description("build the data directories of a NEW cluster (the config's clusterId) from a backup; its tokens start above the backup's")
    .argument('<file>', 'the backup file')
    .requiredOption('--config <file>', 'the new cluster\'s config (a clusterId other than the backup\'s; every node\'s dataDir must be empty)')
    .option('--id <id>', 'build only this member\'s directory (on its own host); needs --min-token')
    .option('--from-config <file>', "the config of the cluster the backup was taken from, when its secret is not --config's: the file's HMAC is checked with either")
    .option('--min-token <n>', 'every new token will exceed this: the highest token your resources accepted (default: a safe bound, see docs)', wholeNumber)
    .option('--trust-unkeyed', 'accept a backup of the older, unkeyed format 1 (only a file nobody but you could have written)')
    .action(async (file: string, o: { config: string; fromConfig?: string; id?: string; minToken?: number; trustUnkeyed?: boolean }) => (await import('./restore.js')).restoreCommand(file, o));
  snapshot
    .command('compact')
    .description("snapshot each node's state now and compact its log (every node of --endpoints or the config, one at a time)")
    .addOption(endpointsOption())
    .option('--endpoint <url>', 'only this node (its client URL)')
    .action(async (o: { endpoint?: string; endpoints?: string }) => {
      const { rpc } = await import('../protocol/rpc.js');
      // Each node keeps its own log: compaction is asked of each, not forwarded to the leader.
      for (const url of o.endpoint !== undefined ? [o.endpoint] : endpointsFrom(o.endpoints)) {
        const r = await rpc(url, { op: 'snapshot' }, 30_000, rpcCredentials());
        process.stdout.write(`${url}: snapshot at index ${r.index}\n`);
      }
    });
}

function wholeNumber(v: string): number {
  const n = Number(v);
  if (!/^\d+$/.test(v) || !Number.isSafeInteger(n)) throw new InvalidArgumentError('must be a whole number');
  return n;
}
