// `palisade session list|show|revoke`: sessions as an operator sees them, and ending one that
// is stuck (etcd's lease list / timetolive / revoke, Consul's session list / destroy). The
// cluster answers these through its leader, which keeps the leases; `revoke` needs an admin
// token and is logged by the node that takes it, with the token's name and the reason.
import { InvalidArgumentError, type Command } from 'commander';
import type { SessionView } from '../protocol/client-protocol.js';
import { ask } from './admin-commands.js';
import { endpointsOption } from './options.js';
import { printable, safeJson } from './terminal-text.js';

type EndpointsFrom = (opt: string | undefined) => string[];

function positiveInt(v: string): number {
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n < 1) throw new InvalidArgumentError('must be a positive whole number');
  return n;
}

/** 1234 ms as "1.2s", 61000 as "1m1s". */
export function duration(ms: number): string {
  if (ms < 1_000) return `${ms}ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(ms < 10_000 ? 1 : 0)}s`;
  const m = Math.floor(ms / 60_000);
  return m < 60 ? `${m}m${Math.floor((ms % 60_000) / 1_000)}s` : `${Math.floor(m / 60)}h${m % 60}m`;
}

function holds(s: SessionView): string {
  const parts = [
    ...s.locks.map((l) => `${l.name}#${l.token}${l.mode === 'shared' ? '(shared)' : ''}`),
    ...s.elections.map((e) => `election:${e}`),
  ];
  return parts.join(', ') || '-';
}

function keepalive(s: SessionView): string {
  return s.sinceKeepAliveMs === null ? '?' : `${duration(s.sinceKeepAliveMs)} ago`;
}

export function formatSessions(list: readonly SessionView[]): string {
  if (list.length === 0) return 'no sessions';
  const header = ['SESSION', 'LABEL', 'OWNER', 'TTL', 'KEEPALIVE', 'HOLDS', 'WAITS FOR', 'KEYS'];
  const lines = list.map((s) => [
    String(s.session),
    s.label ?? '-',
    s.owner ?? '-',
    duration(s.ttlMs),
    keepalive(s),
    holds(s),
    s.waits.map((w) => w.name).join(', ') || '-',
    String(s.ephemeralKeys.length),
  ].map(printable)); // names and labels come from the cluster: nothing a terminal acts on
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  return [header, ...lines].map((l) => l.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd()).join('\n');
}

export function formatSession(s: SessionView): string {
  const list = (xs: readonly string[]): string => (xs.length === 0 ? '-' : xs.join(', '));
  return [
    `session    ${s.session}`,
    `label      ${s.label ?? '-'}`,
    `owner      ${s.owner ?? '-'}`,
    `ttl        ${duration(s.ttlMs)}`,
    `keepalive  ${keepalive(s)}${s.leaseLeftMs === null ? ' (ask the leader for the lease clock)' : `, lease ${duration(s.leaseLeftMs)} left`}`,
    `locks      ${list(s.locks.map((l) => `${l.name} token ${l.token} ${l.mode}`))}`,
    `waits for  ${list(s.waits.map((w) => `${w.name} (${w.mode})`))}`,
    `elections  ${list(s.elections)}`,
    `keys       ${list(s.ephemeralKeys)}`,
  ]
    .map(printable) // names and labels come from the cluster: nothing a terminal acts on
    .join('\n');
}

export function registerSessionCommands(program: Command, endpointsFrom: EndpointsFrom): void {
  const session = program
    .command('session')
    .description('sessions: who holds what and since when, and revoking a stuck one (admin)');
  session
    .command('list')
    .description('list open sessions: owner, TTL, time since the last keepalive, and what each holds, waits for and ties')
    .addOption(endpointsOption())
    .option('--prefix <label>', 'only sessions whose label starts with this (labels are HOST:PID unless the client set one)')
    .option('--owner <token>', 'only sessions opened by this token (a token that is not an admin token sees only its own)')
    .option('--limit <n>', 'at most this many', positiveInt, 1000)
    .option('--json', 'print JSON')
    .action(async (o: { endpoints?: string; prefix?: string; owner?: string; limit: number; json?: boolean }) => {
      // Page by id until the limit: a page may end early (at 100,000 names).
      const list: SessionView[] = [];
      for (;;) {
        const page = await ask(endpointsFrom(o.endpoints), {
          op: 'sessions',
          ...(o.prefix !== undefined ? { prefix: o.prefix } : {}),
          ...(o.owner !== undefined ? { owner: o.owner } : {}),
          limit: o.limit - list.length,
          ...(list.length > 0 ? { after: list[list.length - 1]!.session } : {}),
        });
        list.push(...page);
        if (page.length === 0 || list.length >= o.limit) break;
      }
      process.stdout.write(o.json ? `${safeJson(list)}\n` : `${formatSessions(list)}\n`);
    });
  session
    .command('show')
    .description('one session in full; exit 1 when it is not open')
    .argument('<id>', 'the session id', positiveInt)
    .addOption(endpointsOption())
    .option('--json', 'print JSON (null when it is not open)')
    .action(async (id: number, o: { endpoints?: string; json?: boolean }) => {
      const s = await ask(endpointsFrom(o.endpoints), { op: 'sessionInfo', session: id });
      if (o.json) process.stdout.write(`${safeJson(s)}\n`);
      else if (s === null) process.stderr.write(`palisade: session ${id} is not open (never opened, closed, expired or revoked)\n`);
      else process.stdout.write(`${formatSession(s)}\n`);
      process.exitCode = s === null ? 1 : 0;
    });
  session
    .command('revoke')
    .description('end a session now, as an expiry would (admin token): lock-delay applies, its holders are told, its ephemeral keys go')
    .argument('<id>', 'the session id', positiveInt)
    .requiredOption('--reason <text>', 'why, for the audit log and the holder (1-256 bytes)')
    .addOption(endpointsOption())
    .addHelpText(
      'after',
      `
The session's locks are freed as after an expiry: each waits out its lock-delay before the
next waiter is granted it (with a higher token), because the holder may still be acting on
the resource. Its clients' lock signals abort. Exit status: 0 revoked; 1 the session is not
open; 77 the token is not an admin token; 69 the cluster cannot serve.

Example: palisade session revoke 4711 --reason "holder hung since 03:10, INC-2291"`,
    )
    .action(async (id: number, o: { endpoints?: string; reason: string }) => {
      const r = await ask(endpointsFrom(o.endpoints), { op: 'revokeSession', session: id, reason: o.reason });
      process.stdout.write(`revoked session ${id} (entry ${r.index})\n`);
    });
}
