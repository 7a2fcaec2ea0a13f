// What a failed command says and the code it exits with, worded once for every command that
// talks to a cluster (the table in docs/cli.md lists the codes).
import { EXIT, exitCodeFor } from './exit-codes.js';

export { exitCodeFor };
import { explainFailure } from './credentials.js';
import { faultTolerance } from './quorum.js';
import { fetchStatus } from './status.js';

/**
 * Why the cluster could not serve a request, when some node may still answer: "2 of 3 nodes
 * answer, none has a leader: no quorum". Empty when every node answers with a leader (the
 * failure was something else) or the endpoints came from nowhere we can ask.
 */
export async function diagnose(endpoints: readonly string[]): Promise<string> {
  const rows = await fetchStatus(endpoints, 1_000);
  const up = rows.filter((r) => !('error' in r));
  if (up.length === 0) return `no node answers (${rows.map((r) => r.endpoint).join(', ')})`;
  const leader = up.find((r) => r.role === 'leader');
  const total = Math.max(endpoints.length, ...up.map((r) => ('members' in r ? r.members.length : 0)));
  const ids = up.map((r) => r.id).join(', ');
  const ft = faultTolerance(up.length, total);
  if (!leader) return `${up.length} of ${total} nodes answer (${ids}) and none has a leader: ${ft.danger === 'down' ? `no quorum (${ft.quorum} of ${total} needed)` : 'an election is under way'}`;
  return ft.danger === 'ok' ? '' : `${ft.text}`;
}

/** The words for an unavailable cluster: the failure, and what the nodes say about quorum. */
export async function unavailableText(e: unknown, endpoints: readonly string[]): Promise<string> {
  const base = explainFailure(e);
  if (exitCodeFor(e) !== EXIT.UNAVAILABLE || /no node is listening/.test(base)) return base;
  const why = await diagnose(endpoints).catch(() => '');
  return why ? `${base}\n  ${why}` : base;
}
