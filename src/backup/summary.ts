// What a backup holds, for `palisade snapshot inspect` and for the restore's report: the
// header, and the lock machine read back by the same code a node restores it with (so a
// body the node could not restore is refused here too).
import { LockMachine } from '../lockfsm/index.js';
import type { Backup, BackupHeader } from './format.js';

export interface BackupSummary {
  readonly header: BackupHeader;
  readonly sessions: number;
  readonly locks: { name: string; holders: { session: number; token: number; mode: string }[]; waiters: number }[];
  readonly elections: { name: string; leader: number | null; token: number | null; value: string | null; candidates: number }[];
  readonly keys: { key: string; revision: number; bytes: number }[];
  /** The highest fencing token held (locks) or epoch (elections) in the state, 0 when none. */
  readonly highestToken: number;
}

export function restoreMachine(b: Backup): LockMachine {
  return LockMachine.restore(b.body);
}

export function summarize(b: Backup, m: LockMachine = restoreMachine(b)): BackupSummary {
  let highestToken = 0;
  const locks = m.locks().map((l) => {
    for (const h of l.holders) highestToken = Math.max(highestToken, h.token);
    return { name: l.name, holders: l.holders.map((h) => ({ session: h.session, token: h.token, mode: h.mode })), waiters: l.waiters.length };
  });
  const elections = m.elections().map((e) => {
    if (e.token !== null) highestToken = Math.max(highestToken, e.token);
    return { name: e.election, leader: e.leader, token: e.token, value: e.value, candidates: e.candidates.length };
  });
  const keys = m.kvRange('').map((kv) => ({ key: kv.key, revision: kv.revision, bytes: kv.value.length }));
  return { header: b.header, sessions: m.stats().sessions, locks, elections, keys, highestToken };
}

export function formatSummary(s: BackupSummary, limit: number): string {
  const h = s.header;
  const held = s.locks.filter((l) => l.holders.length > 0).length;
  const lines = [
    `cluster      ${h.clusterId}`,
    `index        ${h.index}   (term ${h.term}, read on ${h.node})`,
    `taken at     ${h.createdAt}`,
    `format       backup v1, ${h.machineFormat} v${h.machineVersion}, ${h.bodyBytes} bytes of state`,
    `sessions     ${s.sessions}`,
    `locks        ${s.locks.length} (${held} held)`,
    `elections    ${s.elections.length} (${s.elections.filter((e) => e.leader !== null).length} with a leader)`,
    `keys         ${s.keys.length}`,
    `highest token held ${s.highestToken}; no token of this state exceeds index ${h.index}`,
  ];
  const table = (title: string, rows: string[]) => {
    if (rows.length === 0) return;
    lines.push('', title);
    for (const r of rows.slice(0, limit)) lines.push(`  ${r}`);
    if (rows.length > limit) lines.push(`  ... ${rows.length - limit} more (--limit)`);
  };
  table('locks', s.locks.map((l) => `${l.name}  ${l.holders.map((x) => `session ${x.session} token ${x.token} ${x.mode}`).join(', ') || 'free'}${l.waiters ? `  ${l.waiters} waiting` : ''}`));
  table('elections', s.elections.map((e) => `${e.name}  ${e.leader === null ? 'no leader' : `leader session ${e.leader} token ${e.token} value ${JSON.stringify(e.value)}`}${e.candidates ? `  ${e.candidates} candidates` : ''}`));
  table('keys', s.keys.map((k) => `${k.key}  revision ${k.revision}  ${k.bytes} bytes`));
  return lines.join('\n');
}
