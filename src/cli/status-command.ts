// `palisade status`: the node table, with unreachable nodes named by their ids, a line saying
// what failure the cluster can still take, and a non-zero exit when no node answers.
import { existsSync } from 'node:fs';
import { loadConfig } from '../config/cluster-config.js';
import { PROTOCOL_VERSION } from '../protocol/client-protocol.js';
import { EXIT, HEALTH_EXIT } from './exit-codes.js';
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
    const hello = await rpc(up.endpoint, { op: 'hello', version: PROTOCOL_VERSION, ...(token !== undefined ? { token } : {}) }, 1_000, tls).catch(() => null);
    for (const m of hello?.members ?? []) if (m.clientUrl) names.set(m.clientUrl, m.id);
  }
  return rows.map((r) => ('error' in r ? { ...r, id: names.get(r.endpoint) ?? r.id } : r));
}

/** What scripts read of the cluster's health: `state` healthy (every node up, a failure to
 *  spare), degraded (writes go on, but a node is down or none can fail), lost (no quorum or
 *  no leader: writes stop). `tolerates`: further node failures writes survive. */
export interface QuorumJson {
  readonly up: number;
  readonly total: number;
  readonly needed: number;
  readonly tolerates: number;
  readonly state: 'healthy' | 'degraded' | 'lost';
}

export function quorumJson(ft: FaultTolerance): QuorumJson {
  const state = ft.danger === 'ok' ? 'healthy' : ft.danger === 'degraded' ? 'degraded' : 'lost';
  return { up: ft.up, total: ft.total, needed: ft.quorum, tolerates: Math.max(0, ft.spare), state };
}

/** `status --json`: the rows, the leader the answering nodes name (of the highest term), and the quorum. */
export function statusJson(rows: readonly StatusRow[]): { nodes: unknown[]; leader: string | null; term: number | null; quorum: QuorumJson; summary: string } {
  const up = rows.filter((r): r is Extract<StatusRow, { term: number }> => !('error' in r));
  const leaderRow = up.filter((r) => r.role === 'leader').sort((a, b) => b.term - a.term)[0];
  const ft = toleranceOf(rows);
  return {
    nodes: rows.map((r) =>
      'error' in r
        ? { id: r.id, role: r.role, term: null, leader: null, commitIndex: null, appliedIndex: null, members: [], pid: null, endpoint: r.endpoint, error: r.error }
        : { id: r.id, role: r.role, term: r.term, leader: r.leader, commitIndex: r.commitIndex, appliedIndex: r.appliedIndex, members: r.members, pid: r.pid, endpoint: r.endpoint, ...(r.warnings?.length ? { warnings: r.warnings } : {}) },
    ),
    leader: leaderRow?.id ?? null,
    term: leaderRow?.term ?? (up.length > 0 ? Math.max(...up.map((r) => r.term)) : null),
    quorum: quorumJson(ft),
    summary: ft.text,
  };
}

/** The rows of every endpoint, unreachable ones named by their node ids where known. */
export async function clusterRows(endpoints: string[]): Promise<StatusRow[]> {
  return nameUnreachable(await fetchStatus(endpoints));
}

export async function statusCommand(endpoints: string[], o: { json?: boolean }): Promise<number> {
  const rows = await clusterRows(endpoints);
  const answered = rows.some((r) => !('error' in r));
  const ft = toleranceOf(rows);
  if (o.json) {
    process.stdout.write(`${safeJson(statusJson(rows))}\n`);
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

/** `palisade health`: one line (or the quorum as JSON) and an exit status for cron and load
 *  balancers: 0 healthy, 1 degraded, 2 no quorum (no node answered, too few up, or no leader). */
export async function healthCommand(endpoints: string[], o: { json?: boolean }): Promise<number> {
  const rows = await clusterRows(endpoints);
  const ft = toleranceOf(rows);
  const q = quorumJson(ft);
  if (o.json) process.stdout.write(`${JSON.stringify({ ...q, summary: ft.text }, null, 2)}\n`);
  else process.stdout.write(`${q.state}: ${colour(ft.text, ft.danger, process.stdout.isTTY === true)}\n`);
  return HEALTH_EXIT[q.state];
}
