// `palisade status`: the node table, with unreachable nodes named by their ids, a line saying
// what failure the cluster can still take, and a non-zero exit when no node answers.
import { existsSync } from 'node:fs';
import { loadConfig } from '../config/cluster-config.js';
import { PROTOCOL_VERSION, type HelloResult } from '../protocol/client-protocol.js';
import { EXIT } from './exit-codes.js';
import { faultTolerance, type Danger, type FaultTolerance } from './quorum.js';
import { fetchStatus, formatStatus, type StatusRow } from './status.js';
import { rpcCredentials } from './credentials.js';
import { safeJson } from './terminal-text.js';

/** The cluster's fault tolerance as the rows show it: voters up of the membership. */
export function toleranceOf(rows: readonly StatusRow[]): FaultTolerance {
  const up = rows.filter((r) => !('error' in r));
  const members = new Set<string>();
  for (const r of up) if ('members' in r) for (const m of r.members) members.add(m);
  const total = Math.max(rows.length, members.size);
  const hasLeader = up.some((r) => r.role === 'leader');
  const ft = faultTolerance(up.length, total);
  // Nodes up but no leader among them: nothing is written now, whatever the count says.
  return hasLeader || ft.danger === 'down' ? ft : { ...ft, danger: 'down', text: `${ft.text}; no leader at the moment` };
}

const COLOURS: Record<Danger, string> = { ok: '\x1b[32m', degraded: '\x1b[33m', down: '\x1b[31m' };

export function colour(text: string, danger: Danger, tty: boolean): string {
  return tty && !process.env.NO_COLOR ? `${COLOURS[danger]}${text}\x1b[0m` : text;
}

/** Node ids for endpoints that did not answer: from the config here, else from a node that did. */
async function nameUnreachable(rows: StatusRow[]): Promise<StatusRow[]> {
  const names = new Map<string, string>();
  const path = process.env.PALISADE_CONFIG ?? 'cluster.config.json';
  try {
    if (existsSync(path)) for (const n of loadConfig(path).nodes) names.set(n.clientUrl, n.id);
  } catch {
    // A config we cannot read names nothing; the table still prints.
  }
  const missing = rows.some((r) => 'error' in r && !names.has(r.endpoint));
  const up = rows.find((r) => !('error' in r));
  if (missing && up) {
    // A node's hello lists the members with their client URLs, and needs no leader (the
    // members op is a linearizable read, which a cluster without quorum cannot serve).
    const { rpc } = await import('../protocol/rpc.js');
    const { token, ...tls } = rpcCredentials();
    const hello = await rpc<HelloResult>(up.endpoint, { op: 'hello', version: PROTOCOL_VERSION, ...(token !== undefined ? { token } : {}) }, 1_000, tls).catch(() => null);
    for (const m of hello?.members ?? []) if (m.clientUrl) names.set(m.clientUrl, m.id);
  }
  return rows.map((r) => ('error' in r ? { ...r, id: names.get(r.endpoint) ?? r.id } : r));
}

export async function statusCommand(endpoints: string[], o: { json?: boolean }): Promise<number> {
  const rows = await nameUnreachable(await fetchStatus(endpoints));
  const answered = rows.some((r) => !('error' in r));
  const ft = toleranceOf(rows);
  if (o.json) {
    const out = rows.map((r) =>
      'error' in r
        ? { id: r.id, role: r.role, term: null, leader: null, commitIndex: null, appliedIndex: null, members: [], pid: null, endpoint: r.endpoint, error: r.error }
        : { id: r.id, role: r.role, term: r.term, leader: r.leader, commitIndex: r.commitIndex, appliedIndex: r.appliedIndex, members: r.members, pid: r.pid, endpoint: r.endpoint },
    );
    process.stdout.write(`${safeJson(out)}\n`);
  } else {
    process.stdout.write(`${formatStatus(rows)}\n\n${colour(ft.text, ft.danger, process.stdout.isTTY === true)}\n`);
  }
  if (!answered) {
    // Not one node answered: say why (often a token or a certificate, not a dead cluster).
    const first = rows[0];
    if (first && 'error' in first) process.stderr.write(`palisade: no node answered: ${first.error}\n`);
    return EXIT.UNAVAILABLE;
  }
  return 0;
}
