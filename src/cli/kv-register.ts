// Registration of `palisade kv put|get|delete|watch` and the aliases `put` and `watch`; the
// commands themselves (kv-commands.ts, which loads the SDK) are imported when one runs.
import { Command, InvalidArgumentError as UsageError } from 'commander';
import { KV_EXIT } from './exit-codes.js';
import { endpointsOption } from './options.js';

const commands = () => import('./kv-commands.js');

type EndpointsFrom = (opt: string | undefined) => string[];

function int(min: number) {
  return (v: string): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) throw new UsageError(`must be a whole number >= ${min}`);
    return n;
  };
}

const EXIT_HELP = `
Exit status: 0 done; ${KV_EXIT.CONFLICT} --if-revision did not match; ${KV_EXIT.FENCED} the lock was lost before
the write applied (refused by the cluster); ${KV_EXIT.WAIT_TIMEOUT} --lock not acquired within --wait;
${KV_EXIT.UNAVAILABLE} cluster unreachable (or no answer in time: the write may have applied); ${KV_EXIT.USAGE} usage.

A fenced write must come from the session that holds the lock, so --lock takes the lock for
this one write (waiting in line for it, up to --wait), fences the write with it and
releases it. A token printed by another process cannot fence a write made here.`;

interface WriteFlags {
  endpoints?: string;
  lock?: string;
  wait?: number;
  ifRevision?: number;
  json?: boolean;
  ephemeral?: boolean;
}

function writeOptions(cmd: Command): Command {
  return cmd
    .addOption(endpointsOption())
    .option('--lock <name>', 'take this lock and apply the write only while it is held (fenced by its token)')
    .option('--wait <ms>', 'with --lock: give up if it is not acquired within this many ms', int(0))
    .option('--if-revision <r>', "apply only if the key's revision is r (0: only if the key does not exist)", int(0))
    .option('--json', 'print JSON');
}

function definePut(cmd: Command, endpointsFrom: EndpointsFrom): Command {
  return writeOptions(
    cmd
      .description('write a key of the key-value space (optionally fenced by a lock, or conditional on its revision)')
      .argument('<key>', 'the key')
      .argument('<value>', 'the value (UTF-8 text; use -- before a value that starts with -)'),
  )
    .option('--ephemeral', 'tie the key to this command\'s session and hold it until Ctrl-C: the key is deleted when the session ends (service registration)')
    .option('--ttl <ms>', 'with --ephemeral: the session TTL (how long the key outlives this process if it stops answering)', int(1))
    .addHelpText(
      'after',
      `${EXIT_HELP}\n\nWith --ephemeral the command holds the key until Ctrl-C or SIGTERM (then exits 0, and the key is\ndeleted with the session), or until the session ends otherwise (revoked or expired: exit ${KV_EXIT.FENCED}).\n\nExamples: palisade put jobs/report/checkpoint '{"page":12}' --lock jobs/report --wait 5000\n          palisade put services/web/10.0.0.5 '{"port":8080}' --ephemeral --ttl 10000`,
    )
    .action(async (key: string, value: string, o: WriteFlags) => {
      process.exitCode = await (await commands()).kvPutCommand(key, value, { ...o, endpoints: endpointsFrom(o.endpoints) });
    });
}

function defineWatch(cmd: Command, endpointsFrom: EndpointsFrom): Command {
  return cmd
    .description('print every change to keys under a prefix, one line each, until Ctrl-C')
    .argument('<prefix>', 'key prefix ("" for every key)')
    .addOption(endpointsOption())
    .option('--json', 'print JSON lines: {"type":"put"|"delete","key","value"|"valueBase64","revision"}')
    .option('--include-existing', 'first print the keys that exist now')
    .option('--from-revision <r>', 'start after this revision (a revision printed before): every change since, then live ones', int(0))
    .addHelpText(
      'after',
      `
Lines: put KEY REVISION "VALUE" (a JSON string; base64:... for bytes that are not UTF-8),
or delete KEY REVISION. "watching PREFIX" goes to stderr once the cluster has the watch.
After a reconnect (another node, a leader change) the watch resumes from the last revision
it printed: every change is printed once, in revision order. If the cluster's watch history
no longer reaches back that far, it says so and exits ${KV_EXIT.COMPACTED}.`,
    )
    .action(async (prefix: string, o: { endpoints?: string; json?: boolean; includeExisting?: boolean; fromRevision?: number }) => {
      process.exitCode = await (await commands()).kvWatchCommand(prefix, { ...o, endpoints: endpointsFrom(o.endpoints) });
    });
}

/** Adds `kv put|get|delete|watch` and the top-level aliases `put` and `watch`. */
export function registerKvCommands(program: Command, endpointsFrom: EndpointsFrom): void {
  const kv = program
    .command('kv')
    .description('the key-value space: put, get, delete, watch (palisade put / watch are short for kv put / watch)')
    .addHelpText('after', '\n`palisade get NAME` shows a lock; `palisade kv get KEY` reads a key.');
  definePut(kv.command('put'), endpointsFrom);
  kv.command('get')
    .description('print the value of a key (a linearizable read)')
    .argument('<key>', 'the key')
    .addOption(endpointsOption())
    .option('--json', 'print {"key","value"|"valueBase64","revision"}, or null')
    .addHelpText('after', `\nExit status: 0 found; ${KV_EXIT.NOT_FOUND} no such key; ${KV_EXIT.UNAVAILABLE} cluster unreachable.`)
    .action(async (key: string, o: { endpoints?: string; json?: boolean }) => {
      process.exitCode = await (await commands()).kvGetCommand(key, { ...o, endpoints: endpointsFrom(o.endpoints) });
    });
  writeOptions(kv.command('delete').description('delete a key (optionally fenced by a lock, or conditional on its revision)').argument('<key>', 'the key'))
    .addHelpText('after', EXIT_HELP)
    .action(async (key: string, o: WriteFlags) => {
      process.exitCode = await (await commands()).kvDeleteCommand(key, { ...o, endpoints: endpointsFrom(o.endpoints) });
    });
  defineWatch(kv.command('watch'), endpointsFrom);
  kv.command('txn')
    .description('apply writes only if every compare holds, else the failure writes: one entry, atomically')
    .argument('[file]', 'the transaction as JSON (default: stdin)')
    .addOption(endpointsOption())
    .option('--lock <name>', 'take this lock and add the compare "held with its token" first (fences the writes)')
    .option('--wait <ms>', 'with --lock: give up if it is not acquired within this many ms', int(0))
    .option('--json', 'print the outcome as JSON')
    .addHelpText(
      'after',
      `
The JSON: {"compare": [...], "success": [...], "failure": [...]}, with compares
  {"target": "revision", "key": K, "op": "eq"|"ne"|"gt"|"lt", "revision": R}
  {"target": "absent", "key": K}
  {"target": "lock", "lock": NAME, "token": T}     (held by this command's session)
and writes {"op": "put", "key": K, "value": TEXT | "valueBase64": B64, "ephemeral"?: true}
or {"op": "delete", "key": K}; at most txn.maxOps (16) of each, a key once per branch.
Exit status: 0 the success branch applied; ${KV_EXIT.CONFLICT} a compare did not hold (the failure branch
applied); ${KV_EXIT.WAIT_TIMEOUT} --lock not acquired within --wait; ${KV_EXIT.USAGE} bad JSON or a transaction the cluster refuses.

Example: echo '{"compare":[{"target":"absent","key":"cfg/v2"}],"success":[{"op":"put","key":"cfg/v2","value":"on"}]}' | palisade kv txn`,
    )
    .action(async (file: string | undefined, o: { endpoints?: string; lock?: string; wait?: number; json?: boolean }) => {
      const { readFileSync } = await import('node:fs');
      const text = readFileSync(file === undefined || file === '-' ? 0 : file, 'utf8');
      process.exitCode = await (await commands()).kvTxnCommand(text, { ...o, endpoints: endpointsFrom(o.endpoints) });
    });

  definePut(program.command('put'), endpointsFrom);
  defineWatch(program.command('watch'), endpointsFrom);
}
