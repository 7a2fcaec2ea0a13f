// The `palisade` command.
import { Command, InvalidArgumentError, Option } from 'commander';
import { existsSync, readFileSync } from 'node:fs';
import { loadConfig } from '../config/cluster-config.js';
import { EXIT, HEALTH_EXIT, UsageError, exitCodeFor } from './exit-codes.js';
import { interrupted } from './interrupt.js';
import { registerAdminCommands } from './admin-commands.js';
import { registerConfigCommands } from './config-commands.js';
import { registerCredentialFileCommands } from './credential-register.js';
import { registerSessionCommands } from './session-commands.js';
import { registerSnapshotCommands } from './snapshot-register.js';
import { registerKvCommands } from './kv-register.js';
import { registerFenceSql } from './fence-sql.js';
import { explainFailure, registerCredentialOptions } from './credentials.js';
import { printableMessage } from './terminal-text.js';
import type { ServeOptions } from './serve.js';
import { endpointsOption } from './options.js';

// Each command loads its implementation when it runs (dynamic import): `palisade --help` or
// `palisade get X` should not pay for the server (LevelDB, prom-client, pino, Raft) or the SDK
// it does not use. Only `serve` and `cluster` load server code.
const lockCommands = () => import('./lock-commands.js');

/** The installed package's version (package.json is two folders up from dist/cli and src/cli). */
const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

const program = new Command();
program
  .name('palisade')
  .description('A lock service with fencing tokens, replicated by Raft.')
  .version(version, '-V, --version', 'print the version of palisade-server')
  .showHelpAfterError()
  .enablePositionalOptions()
  // A command line commander cannot parse exits 64 (EX_USAGE), as the commands' own usage
  // errors do; --help and --version still exit 0. Subcommands inherit this.
  .exitOverride((err) => process.exit(err.exitCode === 0 ? 0 : EXIT.USAGE));

const logLevel = () => new Option('--log-level <level>', 'log level').choices(['trace', 'debug', 'info', 'warn', 'error', 'fatal']).default('info');

/** --endpoints, defaulting to the client URLs of ./cluster.config.json. */
export function endpointsFrom(opt: string | undefined): string[] {
  if (opt) return checkEndpoints(opt.split(',').map((s) => s.trim()).filter(Boolean), '--endpoints');
  const path = process.env.PALISADE_CONFIG ?? 'cluster.config.json';
  if (process.env.PALISADE_ENDPOINTS) return checkEndpoints(process.env.PALISADE_ENDPOINTS.split(','), '$PALISADE_ENDPOINTS');
  if (!existsSync(path)) throw new UsageError(`no --endpoints given and no ${path} here`);
  return loadConfig(path).nodes.map((n) => n.clientUrl);
}

/** The client port speaks WebSocket; an http:// URL is usually the status page's port. */
function checkEndpoints(urls: string[], where: string): string[] {
  for (const u of urls) {
    if (/^https?:\/\//i.test(u)) {
      throw new UsageError(`${where}: ${u} is an HTTP URL; give the nodes' client URLs (ws:// or wss://, "clientUrl" in the config), not the status page's port ("httpUrl")`);
    }
    if (!/^wss?:\/\//i.test(u)) throw new UsageError(`${where}: ${u} is not a ws:// or wss:// URL`);
  }
  return urls;
}

program
  .command('serve')
  .description('run one node of the cluster')
  .requiredOption('--config <file>', 'cluster config file')
  .requiredOption('--id <id>', 'this node\'s id in the config')
  .option('--join <urls>', 'join the running cluster at these client URLs (a new node with an empty data directory)')
  .option('--allow-insecure', 'start even with the published default secret or plain ws:// peer links on a non-loopback address')
  .option('--token <token>', 'for --join with auth on: an admin token (or $PALISADE_TOKEN; default the config\'s first admin token)')
  .option('--ca <file>', 'for --join to wss:// URLs: the CA of the nodes\' certificates (or $PALISADE_CA; default tls.client.ca)')
  .option('--cert <file>', 'for --join: a client certificate (or $PALISADE_CERT; default this node\'s tls.client.cert when required)')
  .option('--key <file>', 'key of --cert (or $PALISADE_KEY)')
  .addOption(logLevel())
  .action(async (o: ServeOptions) => (await import('./serve.js')).serve(o));

program
  .command('recover')
  .description('after losing a quorum for good: a new single-member cluster from one survivor\'s data directory (others then join it)')
  .requiredOption('--from <dir>', 'the survivor\'s data directory (its node stopped); it is read, not changed')
  .requiredOption('--config <file>', 'the new cluster\'s config (a new clusterId)')
  .requiredOption('--id <id>', 'the member to create (its dataDir must be empty)')
  .option('--min-token <n>', 'every new token will exceed this: the highest token your resources accepted (default: a safe bound, see docs)', nonNegativeInt)
  .action(async (o: { from: string; config: string; id: string; minToken?: number }) => (await import('./recover.js')).recoverCommand(o));

program
  .command('cluster')
  .description('start every node of the config on this machine and print the endpoints and leader')
  .option('--config <file>', 'cluster config file', 'cluster.config.json')
  .addOption(logLevel())
  .action(async (o: { config: string; logLevel: string }) => (await import('./cluster.js')).cluster(o));

program
  .command('status')
  .description("print each node's role, term, leader, commit and applied index, members and pid")
  .addOption(endpointsOption())
  .option('--json', 'print JSON: {nodes: [...], leader, term, quorum: {up, total, needed, tolerates, state}, summary}')
  .option('--watch', 'redraw the table every 500 ms until Ctrl-C')
  .addHelpText('after', `\nExit status: 0 when a node answered, ${EXIT.UNAVAILABLE} when none did (for the cluster's health as an exit status: palisade health).`)
  .action(async (o: { endpoints?: string; json?: boolean; watch?: boolean }) => {
    if (o.watch) return (await import('./status-watch.js')).watchStatus(endpointsFrom(o.endpoints));
    process.exitCode = await (await import('./status-command.js')).statusCommand(endpointsFrom(o.endpoints), o);
  });

program
  .command('health')
  .description("the cluster's health as an exit status, for cron and load balancers")
  .addOption(endpointsOption())
  .option('--json', 'print {up, total, needed, tolerates, state, summary}')
  .addHelpText('after', `\nExit status: ${HEALTH_EXIT.healthy} healthy (every member up, a failure to spare), ${HEALTH_EXIT.degraded} degraded (writes go on, but a member\nis down or none may fail), ${HEALTH_EXIT.lost} no quorum (too few members up, no leader, or no node answered).`)
  .action(async (o: { endpoints?: string; json?: boolean }) => {
    process.exitCode = await (await import('./status-command.js')).healthCommand(endpointsFrom(o.endpoints), o);
  });

program
  .command('locks')
  .description('list locks with their holders, tokens and waiters (a linearizable read)')
  .addOption(endpointsOption())
  .option('--prefix <prefix>', 'only locks whose name starts with this')
  .option('--limit <n>', 'at most this many locks', positiveInt, 1000)
  .option('--json', 'print JSON')
  .action(async (o: { endpoints?: string; prefix?: string; limit: number; json?: boolean }) => {
    const { fetchLocks, formatLocks } = await import('./locks.js');
    const locks = await fetchLocks(endpointsFrom(o.endpoints), { ...(o.prefix ? { prefix: o.prefix } : {}), limit: o.limit });
    const { safeJson } = await import('./terminal-text.js');
    process.stdout.write(o.json ? `${safeJson(locks)}\n` : `${formatLocks(locks)}\n`);
  });

program
  .command('lock')
  .description('hold a lock while a command runs; the command gets PALISADE_LOCK_NAME and PALISADE_FENCING_TOKEN')
  .argument('<name>', 'lock name')
  .argument('[command...]', 'the command to run, after --')
  .addOption(endpointsOption())
  .option('--ttl <ms>', 'session TTL: how long the lock outlives this process if it stops answering', positiveInt)
  .option('--wait <ms>', 'give up if not acquired within this many ms', nonNegativeInt)
  .option('--shared', 'take the lock in shared mode')
  .option('--limit <n>', 'shared mode: at most n holders (a semaphore)', positiveInt)
  .option('--grace <ms>', 'after the lease is lost, SIGTERM the command and SIGKILL it after this long', nonNegativeInt, 5000)

  .addHelpText(
    'after',
    `
Exit status: the command's own, or ${EXIT.LEASE_LOST} if the lease was lost while it ran (it was
terminated), ${EXIT.WAIT_TIMEOUT} if the lock was not acquired within --wait, ${EXIT.UNAVAILABLE} if the cluster
could not be reached or has no quorum, ${EXIT.DENIED} if the token does not allow it, ${EXIT.USAGE} on a usage
error (every code: docs/cli.md). Ctrl-C or SIGTERM while connecting or waiting closes
the session (the wait is withdrawn) and exits 130 or 143; while the command runs, the signal is
passed to it, and the lock is released when it exits.

Example: palisade lock nightly-report --wait 1000 -- ./make-report.sh`,
  )
  .action(async (name: string, command: string[], o: { endpoints?: string; ttl?: number; wait?: number; shared?: boolean; limit?: number; grace: number }) => {
    process.exitCode = await (await lockCommands()).lockCommand(name, command, { ...o, endpoints: endpointsFrom(o.endpoints) });
  });

program
  .command('get')
  .description('show who holds a lock, with tokens and waiters (a linearizable read)')
  .argument('<name>', 'lock name')
  .addOption(endpointsOption())
  .option('--json', 'print JSON')
  .addHelpText('after', '\nFor a key of the key-value space: palisade kv get KEY')
  .action(async (name: string, o: { endpoints?: string; json?: boolean }) => {
    process.exitCode = await (await lockCommands()).getCommand(name, { ...o, endpoints: endpointsFrom(o.endpoints) });
  });

program
  .command('elect')
  .description('campaign in an election; print the token when leading; run a command as leader; resign on exit')
  .argument('<name>', 'election name')
  .argument('<value>', 'the value to proclaim (e.g. this instance\'s address)')
  .argument('[command...]', 'a command to run while leading, after --')
  .addOption(endpointsOption())
  .option('--ttl <ms>', 'session TTL', positiveInt)
  .option('--grace <ms>', 'after leadership is lost, SIGTERM the command and SIGKILL it after this long', nonNegativeInt, 5000)

  .action(async (name: string, value: string, command: string[], o: { endpoints?: string; ttl?: number; grace: number }) => {
    process.exitCode = await (await lockCommands()).electCommand(name, value, command, { ...o, endpoints: endpointsFrom(o.endpoints) });
  });

program
  .command('leader')
  .description('show the leader of an election; --watch follows every change')
  .argument('<name>', 'election name')
  .addOption(endpointsOption())
  .option('--watch', 'print every change until Ctrl-C')
  .option('--json', 'print JSON lines')
  .action(async (name: string, o: { endpoints?: string; watch?: boolean; json?: boolean }) => {
    process.exitCode = await (await lockCommands()).leaderCommand(name, { ...o, endpoints: endpointsFrom(o.endpoints) });
  });

registerAdminCommands(program, endpointsFrom);
registerConfigCommands(program, endpointsFrom);
registerCredentialFileCommands(program);
registerSessionCommands(program, endpointsFrom);
registerSnapshotCommands(program, endpointsFrom);
registerKvCommands(program, endpointsFrom);
registerFenceSql(program);
registerCredentialOptions(program);

function nonNegativeInt(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('must be a whole number >= 0');
  return n;
}

function positiveInt(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('must be a positive whole number');
  return n;
}

// Output piped into a reader that stopped (`palisade status --watch | head`): there is no one
// left to print for, so end quietly, as other command-line tools do, not with a stack trace.
process.stdout.on('error', (e: NodeJS.ErrnoException) => {
  if (e.code === 'EPIPE') process.exit(0);
  throw e;
});

program.parseAsync(process.argv).then(
  () => {
    // A signal is ending the command: the interrupt closes its session, then exits 130/143.
    if (interrupted()) return;
    // Commands that leave nothing running end here; servers keep the process alive.
    if (process.exitCode !== undefined) process.exit(process.exitCode);
  },
  (e: Error) => {
    if (interrupted()) return;
    // The cluster's messages quote names any client chose: escaped (terminal-text.ts).
    process.stderr.write(`palisade: ${printableMessage(explainFailure(e))}\n`);
    process.exit(exitCodeFor(e));
  },
);
