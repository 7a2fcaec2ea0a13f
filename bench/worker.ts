// The client process: the orchestrator forks it once per workload (node --import tsx), sends
// the workload's spec, and receives its figures. Everything a workload measures about the
// client (its CPU, its latencies) is this process's, separate from the orchestrator's.
import type { FromWorker, ToWorker, WorkloadResult, WorkloadSpec } from './lib/messages.js';
import { errorText } from './lib/spec.js';
import { runContended } from './workloads/contended.js';
import { FailoverClients } from './workloads/failover.js';
import { runMemory } from './workloads/memory.js';
import { runRaft } from './workloads/raft.js';
import { runSessions } from './workloads/sessions.js';
import { runUncontended } from './workloads/uncontended.js';

function send(m: FromWorker): void {
  process.send?.(m);
}

const log = (line: string): void => send({ type: 'log', line });

async function run(spec: WorkloadSpec): Promise<WorkloadResult> {
  switch (spec.kind) {
    case 'uncontended':
      return runUncontended(spec);
    case 'contended':
      return runContended(spec);
    case 'sessions':
      return runSessions(spec, log);
    case 'raft':
      return runRaft(spec);
    case 'memory':
      return runMemory(spec, log);
    case 'failover':
      return runFailover(spec);
  }
}

/** failover is driven by the orchestrator: it disrupts, we answer with the recovery time. */
function runFailover(spec: Extract<WorkloadSpec, { kind: 'failover' }>): Promise<WorkloadResult> {
  return new Promise((resolve, reject) => {
    FailoverClients.start(spec).then((clients) => {
      process.on('message', (m: ToWorker) => {
        if (m.type === 'disruption') {
          void clients.recovery(m.disruption).then((ms) => send({ type: 'recovered', firstAcquireMs: ms }));
        } else if (m.type === 'finish') {
          clients.finish().then(resolve, reject);
        }
      });
      send({ type: 'ready' });
    }, reject);
  });
}

// Orphaned (the orchestrator died or gave up on us): nothing left to report to.
process.on('disconnect', () => process.exit(1));

process.once('message', (m: ToWorker) => {
  if (m.type !== 'run') return;
  run(m.spec).then(
    (result) => {
      send({ type: 'result', result });
      setTimeout(() => process.exit(0), 100);
    },
    (e: unknown) => {
      send({ type: 'failed', error: errorText(e) + (e instanceof Error && e.stack ? `\n${e.stack}` : '') });
      setTimeout(() => process.exit(1), 100);
    },
  );
});
