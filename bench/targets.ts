// The figures to beat: etcd 3.4's Lock service on this machine class (2 cores, loopback,
// 3 members, fsync on), measured with ../shared/anchors (see docs/benchmarks.md).
export const TARGETS = {
  /** One client cycling acquire/release on its own lock. */
  uncontended1: { cyclesPerSec: 354, acquireP50Ms: 1.43 },
  /** 64 clients, each on its own lock. */
  uncontended64: { cyclesPerSec: 1_593, acquireP99Ms: 58 },
  /** 16 clients contending for one lock. */
  contended16: { handoffsPerSec: 159 },
  /** etcd's leader SIGKILL → first successful lock through a survivor, at etcd's default
   *  timing (heartbeat 100 ms, election 1000 ms). */
  failoverKillMedianMs: 1_290,
  /** etcd's leader CPU at 100,000 leases kept alive at TTL/3 (% of one core). */
  sessions100kLeaderCpuPct: [85, 90] as const,
  /** Raft entries per acquire+release cycle: one each. */
  commitsPerCycle: 2,
} as const;
