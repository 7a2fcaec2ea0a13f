// The headline figures of one case as plain numbers, each with the direction that is better:
// what `npm run bench -- --abba` compares between two builds. The table (report.ts) shows
// more; these are the ones a change to the product moves and a reader compares.
import type { CaseOutcome } from './lib/case-outcome.js';
import type { LatencySummary } from './lib/latency.js';
import { median } from './lib/latency.js';
import type { OpCost } from './lib/node-sampler.js';
import type { Figure } from './lib/abba.js';
import type { Disruption, FailoverResult } from './workloads/failover.js';

/** The tries of one kind and the recovery times of those that recovered (the table's row
 *  and the ABBA comparison both take their median). */
export function recoveries(r: FailoverResult, event: Disruption['event']): { readonly tries: number; readonly ms: readonly number[] } {
  const tries = r.tries.filter((t) => t.event === event);
  return { tries: tries.length, ms: tries.map((t) => t.firstAcquireMs).filter((x): x is number => x !== null) };
}

interface Named extends Omit<Figure, 'key'> {
  readonly name: string;
}

function latency(what: string, l: LatencySummary): Named[] {
  return [
    { name: `${what} p50 ms`, value: l.p50, better: 'lower' },
    { name: `${what} p99 ms`, value: l.p99, better: 'lower' },
  ];
}

function cpuPerCommit(c: OpCost): Named[] {
  return [
    { name: 'leader CPU µs/commit', value: c.cpuMicrosPerCommit.leader, better: 'lower' },
    { name: 'follower CPU µs/commit', value: c.cpuMicrosPerCommit.followers, better: 'lower' },
  ];
}

function named(o: CaseOutcome): Named[] {
  const r = o.result;
  if (!r) return [];
  switch (r.kind) {
    case 'uncontended':
      return [{ name: 'cycles/s', value: r.cyclesPerSec, better: 'higher' }, ...latency('acquire', r.acquireMs), ...cpuPerCommit(r.cost)];
    case 'contended':
      return [{ name: 'handoffs/s', value: r.handoffsPerSec, better: 'higher' }, ...latency('wait', r.waitMs), ...cpuPerCommit(r.cost)];
    case 'raft':
      return [{ name: 'proposals/s', value: r.proposalsPerSec, better: 'higher' }, ...latency('put', r.putMs), ...cpuPerCommit(r.cost)];
    case 'sessions':
      return [{ name: 'leader CPU %', value: r.leaderCpuPct, better: 'lower' }, ...latency('keepalive', r.keepAliveMs)];
    case 'memory':
      return [
        { name: 'leader B/lock', value: r.leaderBytesPerLock, better: 'lower' },
        { name: 'acquires/s', value: r.acquiresPerSec, better: 'higher' },
      ];
    case 'failover':
      return [
        { name: 'SIGKILL → acquire median ms', value: median(recoveries(r, 'kill').ms), better: 'lower' },
        { name: 'transfer → acquire median ms', value: median(recoveries(r, 'transfer').ms), better: 'lower' },
      ];
  }
}

/** Keyed by the case's label and the figure's name, which name the same figure in every run. */
export function figuresOf(o: CaseOutcome): Figure[] {
  return named(o).map((f) => ({ key: `${o.label}: ${f.name}`, value: f.value, better: f.better }));
}
