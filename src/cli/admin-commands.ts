// Operator commands: membership, leadership transfer and snapshots.
import type { Command } from 'commander';
import type { Op, ResultOf } from '../protocol/ops.js';
import type { RequestBody } from '../protocol/rpc.js';
import { rpcCredentials } from './credentials.js';
import { endpointsOption } from './options.js';

/** Ask each endpoint in turn until one answers (any node forwards to the leader). */
export async function ask<O extends Op>(endpoints: string[], body: RequestBody & { readonly op: O }, timeoutMs = 10_000): Promise<ResultOf<O>> {
  // Loaded when a command runs, not when the command line is parsed (start-up time).
  const { rpc, RpcError } = await import('../protocol/rpc.js');
  let last: Error = new Error('no endpoints');
  for (const url of endpoints) {
    try {
      return await rpc<O>(url, body, timeoutMs, rpcCredentials());
    } catch (e) {
      last = e as Error;
      if (e instanceof RpcError && !['UNAVAILABLE', 'TIMEOUT', 'NOT_LEADER'].includes(e.code)) throw e;
    }
  }
  throw last;
}

export function registerAdminCommands(program: Command, endpointsFrom: (opt: string | undefined) => string[]): void {
  const member = program.command('member').description('list, add and remove cluster members (the membership in effect is the one in the log)');
  member
    .command('list')
    .description('list members with their URLs and whether each votes')
    .addOption(endpointsOption())
    .option('--json', 'print JSON')
    .action(async (o: { endpoints?: string; json?: boolean }) => {
      const list = await ask(endpointsFrom(o.endpoints), { op: 'members' });
      const { printable, safeJson } = await import('./terminal-text.js');
      if (o.json) process.stdout.write(`${safeJson(list)}\n`);
      else for (const m of list) process.stdout.write(`${printable(m.id)}  ${m.voter ? 'voter  ' : 'learner'}  peer ${printable(m.peerUrl)}  client ${printable(m.clientUrl)}\n`);
    });
  member
    .command('add')
    .description('add a node as a learner; the leader promotes it to voter once it has caught up. Then, on its host, with a config that lists it (same clusterId and secret; its own dataDir empty), start it: palisade serve --config FILE --id ID --join URLS (docs/operations.md, "Membership")')
    .argument('<id>', 'the new node\'s id')
    .requiredOption('--peer-url <url>', 'its peer URL (ws://host:port)')
    .requiredOption('--client-url <url>', 'its client URL (ws://host:port)')
    .addOption(endpointsOption())
    .action(async (id: string, o: { peerUrl: string; clientUrl: string; endpoints?: string }) => {
      const r = await ask(endpointsFrom(o.endpoints), { op: 'addMember', member: id, peerUrl: o.peerUrl, clientUrl: o.clientUrl });
      process.stdout.write(`added ${id} as a learner (entry ${r.index})\n`);
    });
  member
    .command('remove')
    .description('remove a member (a removed leader steps down; a removed node stops)')
    .argument('<id>', 'the member to remove')
    .addOption(endpointsOption())
    .action(async (id: string, o: { endpoints?: string }) => {
      const r = await ask(endpointsFrom(o.endpoints), { op: 'removeMember', member: id });
      process.stdout.write(`removed ${id} (entry ${r.index})\n`);
    });

  program
    .command('transfer-leader')
    .description('hand leadership to another voter (default: the most caught-up one)')
    .argument('[id]', 'the voter to hand leadership to')
    .addOption(endpointsOption())
    .action(async (id: string | undefined, o: { endpoints?: string }) => {
      const r = await ask(endpointsFrom(o.endpoints), { op: 'transferLeader', ...(id ? { to: id } : {}) });
      process.stdout.write(`leader is now ${r.leader}\n`);
    });

}
