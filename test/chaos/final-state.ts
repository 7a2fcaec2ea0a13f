// Checks after every fault has healed and every client has closed:
// - convergence: every node applies the log past the highest token any client was
//   granted (tokens are log indexes, so an acknowledged grant beyond a node's log after
//   healing would be an acknowledged write the cluster lost);
// - the final state: every lock free and the election without a leader once each client's
//   session is closed or its TTL (plus a new leader's grace) has run out. The reads are
//   recorded in the history, so the checker also holds them against every acknowledged
//   operation: a lost release shows up there as a holder that cannot be.
import type { Operation } from './checker/index.js';
import type { ChaosCluster } from './cluster.js';
import type { ClusterProbe } from './probe.js';

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** The highest token any client was told it holds. */
export function highestAcknowledgedToken(history: readonly Operation[]): number {
  let top = 0;
  for (const op of history) {
    if (op.outcome !== 'ok' || op.result === undefined) continue;
    if (op.op === 'acquire' || op.op === 'campaign') top = Math.max(top, op.result.token);
    if (op.op === 'tryAcquire' && op.result.granted) top = Math.max(top, op.result.token);
  }
  return top;
}

/** Problems found (empty when every node applied past `token` within `boundMs`). */
export async function checkConvergence(cluster: ChaosCluster, token: number, boundMs: number): Promise<string[]> {
  const deadline = Date.now() + boundMs;
  for (;;) {
    const statuses = await cluster.statuses(1_000);
    const behind = cluster.ids
      .map((id) => ({ id, status: statuses.find((s) => s.id === id) ?? null }))
      .filter(({ status }) => status === null || status.appliedIndex < token);
    if (behind.length === 0) return [];
    if (Date.now() > deadline) {
      const what = behind.map(({ id, status }) => (status === null ? `${id} did not answer` : `${id} applied ${status.appliedIndex}`)).join(', ');
      return [`convergence: the highest acknowledged token is ${token}, but after ${boundMs} ms ${what}`];
    }
    await sleep(100);
  }
}

/**
 * Reads every lock and the election until all are free, for at most `boundMs`; returns the
 * problems left at the bound.
 */
export async function checkFinalState(probe: ClusterProbe, locks: readonly string[], boundMs: number): Promise<string[]> {
  const deadline = Date.now() + boundMs;
  for (;;) {
    const problems: string[] = [];
    for (const lock of locks) {
      const r = await probe.read(lock, 2_000);
      if (r === null) problems.push(`final state: lock ${lock} could not be read`);
      else if (r.holders.length > 0) {
        problems.push(`final state: lock ${lock} is still held by ${r.holders.map((h) => `session ${h.session} (token ${h.token})`).join(', ')}`);
      }
    }
    const leader = await probe.readLeader();
    if (leader === undefined) problems.push('final state: the election could not be read');
    else if (leader !== null) problems.push(`final state: the election is still led by session ${leader.session} (token ${leader.token})`);
    if (problems.length === 0) return [];
    if (Date.now() > deadline) return problems.map((p) => `${p} ${boundMs} ms after every client closed`);
    await sleep(250);
  }
}
