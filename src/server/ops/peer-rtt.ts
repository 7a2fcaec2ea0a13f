// Round-trip time to each follower, measured on the leader from Raft traffic it sends
// anyway: the time from sending a heartbeat to reading the follower's heartbeat answer.
// One heartbeat per peer is timed at a time, so answers to untimed heartbeats cannot be
// mistaken for the timed one's (except after a lost heartbeat, which `staleMs` bounds).
// The answer leaves the follower after it has persisted a new commit index, if the
// heartbeat carried one, so this is "heartbeat round trip", not pure network RTT.
import type { Message } from '../../raft/index.js';

export class PeerRtt {
  private readonly sentAt = new Map<string, number>();
  private readonly last = new Map<string, number>();

  constructor(
    private readonly now: () => number,
    private readonly observe: (peer: string, ms: number) => void,
    private readonly staleMs = 2_000,
  ) {}

  sent(msgs: readonly Message[]): void {
    for (const m of msgs) {
      if (m.type !== 'heartbeat') continue;
      const t = this.sentAt.get(m.to);
      const now = this.now();
      if (t === undefined || now - t > this.staleMs) this.sentAt.set(m.to, now);
    }
  }

  received(from: string, msgs: readonly Message[]): void {
    for (const m of msgs) {
      if (m.type !== 'heartbeatResp') continue;
      const t = this.sentAt.get(from);
      if (t === undefined) continue;
      this.sentAt.delete(from);
      const ms = this.now() - t;
      this.last.set(from, ms);
      this.observe(from, ms);
    }
  }

  /** The latest round trip to `peer` in ms, or null when none was measured. */
  lastMs(peer: string): number | null {
    return this.last.get(peer) ?? null;
  }

  /** Forget every measurement (this node stopped leading). */
  clear(): void {
    this.sentAt.clear();
    this.last.clear();
  }
}
