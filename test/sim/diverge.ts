// The dedicated repair scenario: a follower whose log diverged from the leader's over
// several old terms (it led those terms alone, its entries never committed) is brought back
// in line. We count the AppendEntries it rejects: with conflict-term hints the leader skips
// a whole term per round trip, so a few rejections repair even a long divergent suffix.
import { MiniCluster, entries } from '../raft/harness.js';
import type { Entry } from '../../src/raft/index.js';
import type { Prng } from '../support/prng.js';

export interface RepairResult {
  rejections: number;
  conflicting: number;
  oldTerms: number;
  repaired: boolean;
}

/** Build logs: a common prefix, then the leader's terms and the follower's old terms interleaved. */
export function divergedLogs(prefix: number, leaderRuns: [number, number][], followerRuns: [number, number][]): { leader: Entry[]; follower: Entry[] } {
  const leaderTerms: number[] = [];
  for (const [term, n] of leaderRuns) for (let i = 0; i < n; i++) leaderTerms.push(term);
  const followerTerms: number[] = [];
  for (const [term, n] of followerRuns) for (let i = 0; i < n; i++) followerTerms.push(term);
  const common = entries(1, Array(prefix).fill(1));
  return {
    leader: [...common, ...entries(prefix + 1, leaderTerms, 'L')],
    follower: [...common, ...entries(prefix + 1, followerTerms, 'F')],
  };
}

/**
 * Elect the leader-to-be (its log wins) and count the follower's rejections until its log
 * equals the leader's. `hints: false` strips the follower's conflict hints, so the leader
 * falls back to stepping back one index per rejection (the paper's basic algorithm).
 */
export function repairOnce(
  leaderLog: Entry[],
  followerLog: Entry[],
  cfg: { maxInflight?: number; maxMsgBytes?: number } = {},
  hints = true,
): RepairResult {
  const lastTerm = (l: Entry[]) => l[l.length - 1]?.term ?? 0;
  const term = Math.max(lastTerm(leaderLog), lastTerm(followerLog));
  const commit = (l: Entry[]) => l.findIndex((e) => e.term !== 1) < 0 ? l.length : l.findIndex((e) => e.term !== 1);
  const c = new MiniCluster(['a', 'b', 'c'], {
    seed: 7,
    cfg: { ...cfg },
    nodes: {
      a: { initial: { hardState: { term, vote: null, commit: commit(leaderLog) }, entries: leaderLog } },
      b: { initial: { hardState: { term, vote: null, commit: commit(followerLog) }, entries: followerLog } },
      c: { initial: { hardState: { term, vote: null, commit: commit(leaderLog) }, entries: leaderLog } },
    },
  });
  let rejections = 0;
  c.filter = (m) => {
    if (m.type === 'appResp' && m.from === 'b' && m.reject) {
      rejections++;
      if (!hints) return { ...m, rejectHint: m.index! - 1, rejectTerm: 0 };
    }
    return true;
  };
  c.elect('a');
  c.deliverAll();
  const a = c.node('a').log;
  const b = c.node('b').log;
  const repaired = a.lastIndex() === b.lastIndex() && a.lastTerm() === b.lastTerm();
  const firstDiff = followerLog.findIndex((e, i) => leaderLog[i]?.term !== e.term);
  const conflicting = firstDiff < 0 ? 0 : followerLog.length - firstDiff;
  return { rejections, conflicting, oldTerms: 0, repaired };
}

/** A random divergence: 1-4 old terms on the follower, interleaved with the leader's terms. */
export function repairScenario(rng: Prng): RepairResult {
  const prefix = rng.range(1, 30);
  const oldTerms = rng.range(1, 4);
  const leaderRuns: [number, number][] = [];
  const followerRuns: [number, number][] = [];
  let term = 2;
  let total = 0;
  const conflicting = rng.range(20, 200);
  for (let k = 0; k < oldTerms; k++) {
    // the leader's history has a term here too (sometimes), then the follower led one alone
    if (rng.chance(0.6)) leaderRuns.push([term++, rng.range(1, 20)]);
    const n = k === oldTerms - 1 ? conflicting - total : rng.range(1, Math.max(1, Math.floor((conflicting - total) / 2)));
    followerRuns.push([term++, Math.max(1, n)]);
    total += Math.max(1, n);
  }
  leaderRuns.push([term++, rng.range(1, 30)]);
  const { leader, follower } = divergedLogs(prefix, leaderRuns, followerRuns);
  const r = repairOnce(leader, follower, { maxInflight: rng.pick([1, 4, 256]), maxMsgBytes: rng.pick([256, 1 << 20]) });
  if (!r.repaired) throw new Error('repair scenario: the follower was not repaired');
  return { ...r, oldTerms };
}
