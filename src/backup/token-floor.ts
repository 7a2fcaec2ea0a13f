// The token floor of a new cluster built from old state (a restored backup, a recovered
// survivor): its log starts right above the floor, so every token it grants exceeds the
// floor. Every token the old cluster granted must lie below it, or a resource that
// remembers an old token refuses every new holder, and a new token equal to an old one
// would pass a fence as the old holder (fences accept an equal token: one holder acts many
// times).
//
// The state we start from knows tokens up to its own last index. The old cluster may have
// gone further after it (a backup is older than the cluster's last write; the lost members
// of a cluster may have committed entries the survivor never received). Two ways to cover
// that:
// - the operator reads the highest token a resource has accepted and passes it
//   (--min-token): the floor is then max(that, the state's index), exactly;
// - by default, a bound on how far the old cluster could have gone: at most
//   MAX_ENTRIES_PER_SECOND entries for every second since the state was written, plus an
//   hour of slack for clocks. No Raft group of ours commits a million entries a second (the
//   benchmarks measure tens of thousands), and the floor stays far below 2^53 for centuries.
export const MAX_ENTRIES_PER_SECOND = 1_000_000;
export const CLOCK_SLACK_SECONDS = 3_600;
/** How far in the future of this machine's clock the state's time may lie (two machines'
 *  clocks differ a little): within it the elapsed time counts as 0, which the hour of clock
 *  slack covers. Further is refused: the elapsed time the floor depends on is unknown. */
export const FUTURE_SLACK_SECONDS = 60;
/** Tokens travel as JavaScript numbers: keep a wide margin below 2^53. */
const MAX_FLOOR = 2 ** 52;

export interface TokenFloor {
  readonly floor: number;
  readonly why: string;
}

export function tokenFloor(o: { lastIndex: number; writtenAtMs: number; nowMs: number; minToken?: number }): TokenFloor {
  let result: TokenFloor;
  if (o.minToken !== undefined) {
    result =
      o.minToken >= o.lastIndex
        ? { floor: o.minToken, why: `--min-token ${o.minToken}` }
        : { floor: o.lastIndex, why: `the state's last index ${o.lastIndex} (above --min-token ${o.minToken})` };
  } else {
    if (!Number.isFinite(o.writtenAtMs)) throw new RangeError('the state has no valid time of writing: pass --min-token with the highest token your resources accepted');
    const ahead = (o.writtenAtMs - o.nowMs) / 1000;
    if (ahead > FUTURE_SLACK_SECONDS) {
      // A time in the future would make the elapsed time 0 and the floor as low as it goes.
      throw new RangeError(
        `the state was written at ${new Date(o.writtenAtMs).toISOString()}, ${Math.round(ahead)} s after this machine's clock says it is now: ` +
          "one of the two clocks is wrong, and the time since it was written (which the default token floor depends on) is unknown; " +
          'fix the clock, or pass --min-token with the highest token your resources accepted',
      );
    }
    const seconds = Math.max(0, Math.ceil((o.nowMs - o.writtenAtMs) / 1000)) + CLOCK_SLACK_SECONDS;
    result = {
      floor: o.lastIndex + seconds * MAX_ENTRIES_PER_SECOND,
      why:
        `the state's last index ${o.lastIndex} + ${MAX_ENTRIES_PER_SECOND} entries a second for the ${seconds - CLOCK_SLACK_SECONDS} s ` +
        `since it was written and an hour of clock slack (pass --min-token with the highest token your resources accepted for an exact floor)`,
    };
  }
  if (result.floor > MAX_FLOOR) throw new RangeError(`token floor ${result.floor} is beyond 2^52; pass a smaller --min-token`);
  return result;
}
