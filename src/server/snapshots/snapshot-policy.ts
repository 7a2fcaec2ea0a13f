// When a node snapshots its lock machine. Every `snapshot.entries` applied entries, as
// configured, but also only once the entries applied since the last snapshot add up to
// SNAPSHOT_LOG_RATIO times that snapshot's size (LogCabin's snapshotRatio). A snapshot costs
// time proportional to the whole state, not to the entries since the last one: at 300,000
// sessions one took 70-190 ms on an idle process and 300-1,200 ms on a loaded leader, which
// then missed its heartbeats (its encoding is now spread over event-loop turns, see
// takeSnapshot in node.ts, but the copy it encodes is still taken in one); and with a fixed
// 20,000-entry period opening 300,000 sessions took 15 of them, each larger than the last. With the ratio the
// snapshots' total cost stays within a constant factor of the bytes applied, and the log
// kept between snapshots is at most about that factor times the state's size.

export const SNAPSHOT_LOG_RATIO = 4;

export class SnapshotPolicy {
  private lastIndex: number;
  private lastBytes: number;
  private bytesSince = 0;

  constructor(
    private readonly minEntries: number,
    /** The snapshot the node started from (index 0, 0 bytes: none). */
    from: { readonly index: number; readonly bytes: number },
  ) {
    this.lastIndex = from.index;
    this.lastBytes = from.bytes;
  }

  /** An entry of `bytes` was applied. */
  applied(bytes: number): void {
    this.bytesSince += bytes;
  }

  /** Whether to snapshot now, at applied index `applied`. */
  due(applied: number): boolean {
    return applied - this.lastIndex >= this.minEntries && this.bytesSince >= SNAPSHOT_LOG_RATIO * this.lastBytes;
  }

  /** A snapshot of `bytes` at `index` is in place (taken here or installed from the leader);
   *  `bytesSince`: what was applied after `index` by then. */
  taken(index: number, bytes: number, bytesSince = 0): void {
    this.lastIndex = index;
    this.lastBytes = bytes;
    this.bytesSince = bytesSince;
  }

  /** Bytes applied since the last snapshot: read when a snapshot starts, so that what is
   *  applied while it is written counts towards the next one. */
  get pending(): number {
    return this.bytesSince;
  }
}
