// Which followers are not catching up: the leader's log moved on while a member's match
// index stood still. A follower that went backwards used to look healthy here (the leader
// kept its old match, so its lag read 0); the core now re-probes it, and this watch shows
// whoever still makes no progress (down, partitioned, too slow, or refusing our appends).
export interface StalledPeer {
  readonly id: string;
  readonly match: number;
  readonly behind: number;
  /** How long its match index has not moved while it was behind. */
  readonly stalledMs: number;
}

export class CatchUpWatch {
  private readonly seen = new Map<string, { match: number; since: number }>();

  /** Feed the leader's view of each member; returns every member behind, with how long it
   *  has been stuck. On a follower (no progress) the memory is cleared. */
  observe(peers: readonly { id: string; match: number }[], lastIndex: number, now: number): StalledPeer[] {
    const out: StalledPeer[] = [];
    const ids = new Set<string>();
    for (const p of peers) {
      ids.add(p.id);
      let rec = this.seen.get(p.id);
      if (!rec || rec.match !== p.match || p.match >= lastIndex) {
        rec = { match: p.match, since: now };
        this.seen.set(p.id, rec);
      }
      if (p.match < lastIndex) out.push({ id: p.id, match: p.match, behind: lastIndex - p.match, stalledMs: now - rec.since });
    }
    for (const id of [...this.seen.keys()]) if (!ids.has(id)) this.seen.delete(id);
    return out;
  }
}
