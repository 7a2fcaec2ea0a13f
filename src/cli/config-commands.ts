// `palisade config get|set`: the cluster's replicated settings (docs/operations.md, "Cluster
// settings"). They are state of the lock machine, changed by a committed entry that every
// node applies; a node's file gives only a new cluster's first values.
import type { Command } from 'commander';
import { ask } from './admin-commands.js';
import { UsageError } from './exit-codes.js';
import { endpointsOption } from './options.js';

export function registerConfigCommands(program: Command, endpointsFrom: (opt: string | undefined) => string[]): void {
  const config = program.command('config').description("the cluster's replicated settings: the same on every node, changed only through the log");
  config
    .command('get')
    .description('print the settings in effect (a linearizable read)')
    .argument('[key]', 'one setting, e.g. sessions.lockDelayMs')
    .addOption(endpointsOption())
    .option('--json', 'print JSON')
    .action(async (key: string | undefined, o: { endpoints?: string; json?: boolean }) => {
      const r = await ask(endpointsFrom(o.endpoints), { op: 'config' });
      if (key !== undefined && !(key in r.settings)) throw new UsageError(`${key} is not a cluster setting; they are ${Object.keys(r.settings).join(', ')}`);
      if (o.json) process.stdout.write(`${JSON.stringify(key === undefined ? r : { [key]: r.settings[key] }, null, 2)}\n`);
      else if (key !== undefined) process.stdout.write(`${r.settings[key]}\n`);
      else {
        const width = Math.max(...Object.keys(r.settings).map((k) => k.length));
        for (const [k, v] of Object.entries(r.settings)) process.stdout.write(`${k.padEnd(width)}  ${v}\n`);
        if (!r.configured) process.stdout.write('(defaults: the cluster has not been configured yet)\n');
      }
    });
  config
    .command('set')
    .description('change settings (admin token): one entry in the log, applied by every node at once')
    .argument('<key=value...>', 'settings to change, e.g. sessions.lockDelayMs=4000')
    .addOption(endpointsOption())
    .action(async (pairs: string[], o: { endpoints?: string }) => {
      const settings: Record<string, number> = {};
      for (const pair of pairs) {
        const m = /^([A-Za-z][\w.]*)=(\d+)$/.exec(pair);
        if (!m) throw new UsageError(`expected KEY=VALUE with a non-negative integer value, got ${JSON.stringify(pair)}`);
        settings[m[1]!] = Number(m[2]);
      }
      const r = await ask(endpointsFrom(o.endpoints), { op: 'configure', settings });
      if (r.changed.length === 0) process.stdout.write(`nothing changed (entry ${r.index})\n`);
      for (const k of r.changed) process.stdout.write(`${k} = ${r.settings[k]} (entry ${r.index})\n`);
    });
}
