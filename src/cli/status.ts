// `palisade status`: each node's view of the cluster.
import type { NodeStatus } from '../protocol/client-protocol.js';
import { rpc, type RpcCredentials } from '../protocol/rpc.js';
import { explainFailure, rpcCredentials } from './credentials.js';
import { printable } from './terminal-text.js';

export type StatusRow = (NodeStatus & { endpoint: string }) | { endpoint: string; id: string; role: 'unreachable'; error: string };

export async function fetchStatus(endpoints: readonly string[], timeoutMs = 1_500, credentials: RpcCredentials = rpcCredentials()): Promise<StatusRow[]> {
  return Promise.all(
    endpoints.map(async (endpoint, i): Promise<StatusRow> => {
      try {
        const s = await rpc(endpoint, { op: 'status' }, timeoutMs, credentials);
        return { ...s, endpoint };
      } catch (e) {
        return { endpoint, id: `?${i + 1}`, role: 'unreachable', error: explainFailure(e) };
      }
    }),
  );
}

export function formatStatus(rows: readonly StatusRow[]): string {
  const header = ['ID', 'ROLE', 'TERM', 'LEADER', 'COMMIT', 'APPLIED', 'MEMBERS', 'PID', 'ENDPOINT'];
  // What nodes say about themselves is shown escaped too: ids and warnings come over the wire.
  const p = printable;
  const lines = rows.map((r) =>
    'error' in r
      ? [p(r.id), 'unreachable', '-', '-', '-', '-', '-', '-', r.endpoint]
      : [p(r.id), p(r.role), String(r.term), p(r.leader ?? '-'), String(r.commitIndex), String(r.appliedIndex), p(r.members.join(',')), String(r.pid), r.endpoint],
  );
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const table = [header, ...lines].map((l) => l.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd());
  // What needs an operator (a member not catching up, a refused peer, a moved address).
  const warnings = rows.flatMap((r) => ('error' in r ? [] : (r.warnings ?? []).map((w) => `WARNING ${p(r.id)}: ${p(w)}`)));
  return [...table, ...warnings].join('\n');
}
