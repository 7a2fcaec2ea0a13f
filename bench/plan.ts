// Which figures a run measures, in order: one case = one fresh cluster + one client process.
import type { WorkloadSpec } from './lib/messages.js';
import type { BenchNode } from './lib/node-sampler.js';
import type { BenchOptions, WorkloadName } from './lib/options.js';

export interface BenchCase {
  readonly workload: WorkloadName;
  readonly label: string;
  readonly spec: (nodes: readonly BenchNode[], endpoints: readonly string[]) => WorkloadSpec;
}

export function planCases(o: BenchOptions): BenchCase[] {
  const timing = (nodes: readonly BenchNode[], endpoints: readonly string[]) => ({
    nodes,
    endpoints,
    warmupMs: o.warmupMs,
    durationMs: o.durationMs,
  });
  const cases: BenchCase[] = [];
  for (const w of o.only) {
    switch (w) {
      case 'uncontended':
        for (const clients of o.uncontendedClients) {
          cases.push({ workload: w, label: `uncontended C=${clients}`, spec: (n, e) => ({ kind: 'uncontended', clients, ...timing(n, e) }) });
        }
        break;
      case 'contended':
        cases.push({ workload: w, label: 'contended W=16', spec: (n, e) => ({ kind: 'contended', clients: 16, ...timing(n, e) }) });
        break;
      case 'raft':
        cases.push({ workload: w, label: 'raft 64 in flight', spec: (n, e) => ({ kind: 'raft', inFlight: 64, valueBytes: 64, ...timing(n, e) }) });
        break;
      case 'sessions':
        for (const sessions of o.sessionCounts) {
          cases.push({
            workload: w,
            label: `sessions ${sessions.toLocaleString('en-US')}${o.keepAliveFrames === 'each' ? ' (a frame per keepalive)' : ''}`,
            spec: (n, e) => ({ kind: 'sessions', sessions, sessionsPerConnection: 1_000, ttlMs: o.sessionTtlMs, at: o.sessionsAt, keepAliveFrames: o.keepAliveFrames, ...timing(n, e) }),
          });
        }
        break;
      case 'memory':
        cases.push({
          workload: w,
          label: `memory ${(o.memorySessions * o.locksPerSession).toLocaleString('en-US')} locks`,
          spec: (n, e) => ({
            kind: 'memory',
            sessions: o.memorySessions,
            locksPerSession: o.locksPerSession,
            sessionsPerConnection: 100,
            ttlMs: o.sessionTtlMs,
            ...timing(n, e),
          }),
        });
        break;
      case 'failover':
        cases.push({ workload: w, label: `failover ×${o.tries}`, spec: (n, e) => ({ kind: 'failover', clients: 8, probes: 4, ...timing(n, e) }) });
        break;
    }
  }
  return cases;
}
