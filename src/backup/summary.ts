// What a backup holds, for `palisade snapshot inspect` and for the restore's report: the
// header, and the lock machine read back by the same code a node restores it with (so a
// body the node could not restore is refused here too).
import { LockMachine } from '../lockfsm/index.js';
import { UNKEYED_FORMAT_VERSION, type Backup, type BackupHeader } from './format.js';

export interface BackupSummary {
  readonly header: BackupHeader;
  /** What vouches for the file: its HMAC under the cluster secret (checked), or nothing
   *  (inspected without the secret, or the unkeyed format 1). */
  readonly hmac: 'verified' | 'not checked' | 'none (unkeyed format 1)';
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
  const hmac = b.version === UNKEYED_FORMAT_VERSION ? 'none (unkeyed format 1)' : b.verified ? 'verified' : 'not checked';
  return { header: b.header, hmac, sessions: m.stats().sessions, locks, elections, keys, highestToken };
}
