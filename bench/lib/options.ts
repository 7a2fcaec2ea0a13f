// Command-line options of `npm run bench`.
import { parseArgs } from 'node:util';
import type { KeepAliveFrames } from './session-pool.js';

export const WORKLOADS = ['uncontended', 'contended', 'raft', 'sessions', 'memory', 'failover'] as const;
export type WorkloadName = (typeof WORKLOADS)[number];

export interface BenchOptions {
  readonly quick: boolean;
  readonly only: readonly WorkloadName[];
  /** Measurement window per figure. */
  readonly durationMs: number;
  readonly warmupMs: number;
  /** Failover tries of each kind. */
  readonly tries: number;
  readonly sessionCounts: readonly number[];
  readonly sessionTtlMs: number;
  /** Where the sessions workload's connections go: every node in turn, or the leader only. */
  readonly sessionsAt: 'all' | 'leader';
  /** How the sessions workload's pool sends keepalives (session-pool.ts). */
  readonly keepAliveFrames: KeepAliveFrames;
  readonly memorySessions: number;
  readonly locksPerSession: number;
  readonly uncontendedClients: readonly number[];
  readonly outDir: string;
  readonly build: boolean;
  readonly keepData: boolean;
  /** A case that has not finished by then is stopped and reported as failed. */
  readonly caseTimeoutMs: number;
  /** Compare another commit's build (A) with this working tree's (B), or null for a plain run. */
  readonly abba: AbbaOptions | null;
}

export interface AbbaOptions {
  /** The commit whose build is A: anything `git rev-parse` takes. */
  readonly ref: string;
  /** Each round runs A B B A. */
  readonly rounds: number;
}

export const ABBA_DEFAULT_REF = 'HEAD~1';

export const USAGE = `npm run bench -- [options]
  --quick              every workload for about a second, scaled-down sessions and memory
  --only LIST          comma-separated: ${WORKLOADS.join(', ')}
  --duration S         measurement window per figure (default 10, quick 1)
  --warmup S           warm-up before each window (default 2, quick 0.5)
  --tries N            failover tries of each kind (default 10, quick 2)
  --sessions LIST      open sessions for the sessions workload (default 10000,100000,300000; quick 2000)
  --session-ttl MS     their TTL; keepalives go every TTL/3 (default 30000)
  --sessions-at WHERE  all: their connections spread over every node (default); leader: all to the leader
  --keepalive FRAMES   batch: one keepAlives frame per connection and tick (default); each: one keepAlive
                       frame per session (as before keepAlives, and as a node of an older release needs)
  --locks N            locks held for the memory figure (default 100000; quick 10000) by 1,000 sessions
  --clients LIST       client counts of the uncontended workload (default 1,16,64,256)
  --out DIR            where the JSON goes (default bench/results)
  --no-build           use dist/ as it is (by default it is rebuilt when src/ is newer)
  --keep-data          keep each cluster's folder (logs, LevelDB) and print where it is
  --case-timeout S     give up on a figure after this long (default 600, quick 240)
  --abba [REF]         compare REF's build (A, default ${ABBA_DEFAULT_REF}) with this working tree's (B): the
                       chosen figures run A B B A, each on fresh clusters, and the table gives each
                       side's median, B/A and its spread over neighbouring A,B pairs; never fails on a slowdown
  --rounds N           ABBA rounds (default 2: A B B A A B B A)`;

function list(v: string | undefined): string[] | undefined {
  return v === undefined ? undefined : v.split(',').map((x) => x.trim()).filter(Boolean);
}

function numbers(v: string | undefined, what: string): number[] | undefined {
  const l = list(v);
  if (!l) return undefined;
  const out = l.map(Number);
  if (out.some((n) => !Number.isFinite(n) || n <= 0)) throw new Error(`${what}: expected positive numbers, got "${v}"`);
  return out;
}

/** `--abba` takes its REF only when one follows (`--abba --quick` is HEAD~1), which parseArgs
 *  cannot say: it is taken out of argv here. */
function takeAbba(argv: readonly string[]): { readonly rest: string[]; readonly ref: string | null } {
  const rest: string[] = [];
  let ref: string | null = null;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a !== '--abba' && !a.startsWith('--abba=')) {
      rest.push(a);
      continue;
    }
    if (ref !== null) throw new Error('--abba: given twice');
    if (a.startsWith('--abba=')) ref = a.slice('--abba='.length);
    else if (argv[i + 1] !== undefined && !argv[i + 1]!.startsWith('-')) ref = argv[++i]!;
    else ref = ABBA_DEFAULT_REF;
    if (ref === '') throw new Error('--abba=: expected a commit');
  }
  return { rest, ref };
}

export function parseOptions(argv: readonly string[]): BenchOptions | 'help' {
  const abba = takeAbba(argv);
  const { values } = parseArgs({
    args: abba.rest,
    options: {
      quick: { type: 'boolean', default: false },
      only: { type: 'string' },
      duration: { type: 'string' },
      warmup: { type: 'string' },
      tries: { type: 'string' },
      sessions: { type: 'string' },
      'session-ttl': { type: 'string' },
      'sessions-at': { type: 'string', default: 'all' },
      keepalive: { type: 'string', default: 'batch' },
      locks: { type: 'string' },
      clients: { type: 'string' },
      out: { type: 'string', default: 'bench/results' },
      'no-build': { type: 'boolean', default: false },
      'keep-data': { type: 'boolean', default: false },
      'case-timeout': { type: 'string' },
      rounds: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  if (values.help) return 'help';
  const quick = values.quick ?? false;
  const only = (list(values.only) ?? [...WORKLOADS]) as WorkloadName[];
  for (const w of only) if (!WORKLOADS.includes(w)) throw new Error(`--only: unknown workload "${w}" (have: ${WORKLOADS.join(', ')})`);
  const seconds = (v: string | undefined, fallback: number, what: string): number => {
    if (v === undefined) return fallback * 1000;
    const n = Number(v);
    if (!(n > 0)) throw new Error(`${what}: expected seconds > 0, got "${v}"`);
    return n * 1000;
  };
  const sessionsAt = values['sessions-at'];
  if (sessionsAt !== 'all' && sessionsAt !== 'leader') throw new Error(`--sessions-at: expected all or leader, got "${sessionsAt}"`);
  const keepAliveFrames = values.keepalive;
  if (keepAliveFrames !== 'batch' && keepAliveFrames !== 'each') throw new Error(`--keepalive: expected batch or each, got "${keepAliveFrames}"`);
  const locks = numbers(values.locks, '--locks')?.[0] ?? (quick ? 10_000 : 100_000);
  const rounds = numbers(values.rounds, '--rounds')?.[0] ?? 2;
  if (!Number.isInteger(rounds)) throw new Error(`--rounds: expected a whole number, got "${values.rounds}"`);
  if (values.rounds !== undefined && abba.ref === null) throw new Error('--rounds: only with --abba');
  return {
    quick,
    only: WORKLOADS.filter((w) => only.includes(w)),
    durationMs: seconds(values.duration, quick ? 1 : 10, '--duration'),
    warmupMs: seconds(values.warmup, quick ? 0.5 : 2, '--warmup'),
    tries: numbers(values.tries, '--tries')?.[0] ?? (quick ? 2 : 10),
    sessionCounts: numbers(values.sessions, '--sessions') ?? (quick ? [2_000] : [10_000, 100_000, 300_000]),
    sessionTtlMs: numbers(values['session-ttl'], '--session-ttl')?.[0] ?? 30_000,
    sessionsAt,
    keepAliveFrames,
    // 1,000 sessions whatever the count (1,000 acquires in flight), up to 100 locks each.
    memorySessions: Math.max(1, Math.round(locks / Math.max(1, Math.min(100, Math.round(locks / 1_000))))),
    locksPerSession: Math.max(1, Math.min(100, Math.round(locks / 1_000))),
    uncontendedClients: numbers(values.clients, '--clients') ?? [1, 16, 64, 256],
    outDir: values.out ?? 'bench/results',
    build: !(values['no-build'] ?? false),
    keepData: values['keep-data'] ?? false,
    caseTimeoutMs: seconds(values['case-timeout'], quick ? 240 : 600, '--case-timeout'),
    abba: abba.ref === null ? null : { ref: abba.ref, rounds },
  };
}
