// What each fault cost the heartbeat client, worked out after the run (pure). The heartbeat
// acquires and releases a lock of its own every 100 ms; a gap between two successful
// acquires longer than GAP_AFTER_MS is an outage. Each outage is attributed to the fault
// under which it began: the first fault that started inside the gap, else the fault active
// when the gap began, else a fault whose heal came shortly before or inside it ("heal").
// Every fault gets an outage (the sum of the gaps attributed to it, 0 when none), so the
// median over a class counts the faults that cost nothing too.
//
// Where the time of a leader fault goes, when the node logs say: fault → the first
// "became leader" after it (election), and that → the heartbeat's next success (the client
// finding the new leader and being served).
import type { FaultRecord } from './recorder.js';

/** Gaps between successful heartbeat acquires longer than this are outages (cadence 100 ms). */
export const GAP_AFTER_MS = 250;
/** A gap that begins this soon after a heal is put down to the heal. */
const HEAL_EFFECT_MS = 1_000;

export type FaultRole = 'leader' | 'follower';

export interface FaultSpan {
  readonly kind: string;
  readonly role: FaultRole | null;
  readonly start: number;
  readonly end: number;
  readonly detail: string;
}

export interface LeaderChange {
  /** On the run clock. */
  readonly atMs: number;
  readonly node: string;
  readonly term: number;
}

export interface FaultOutage {
  /** kill, pause, isolate, one-way, bridge, client-pause, with the role: "kill/leader". */
  readonly cls: string;
  readonly fault: FaultSpan;
  /** Sum of the gaps attributed to the fault. */
  readonly outageMs: number;
  /** Fault start → first new leader after it, when one was elected during or just after it. */
  readonly electionMs: number | null;
  /** That new leader → the heartbeat's first success after it. */
  readonly serveMs: number | null;
}

export interface OutageReport {
  readonly perFault: readonly FaultOutage[];
  readonly gaps: readonly { readonly from: number; readonly to: number; readonly cause: string }[];
  readonly longestGapMs: number;
}

/** The class a fault counts in. */
export function faultClass(kind: string, role: FaultRole | null): string {
  const family: Record<string, string> = {
    kill: 'kill',
    'kill-leader': 'kill',
    pause: 'pause',
    'pause-leader': 'pause',
    'partition-leader': 'isolate',
    'partition-halves': 'isolate',
    'partition-one-way': 'one-way',
    'partition-bridge': 'bridge',
    'pause-client': 'client-pause',
  };
  const f = family[kind] ?? kind;
  return role === null || f === 'client-pause' ? f : `${f}/${role}`;
}

/** Pairs start and end records (faults run one at a time). */
export function faultSpans(records: readonly FaultRecord[], runEndMs: number): FaultSpan[] {
  const spans: FaultSpan[] = [];
  let open: FaultRecord | null = null;
  const close = (o: FaultRecord, end: number): void => {
    spans.push({ kind: o.kind, role: o.role ?? null, start: o.atMs, end, detail: o.detail });
  };
  for (const f of [...records].sort((a, b) => a.atMs - b.atMs)) {
    if (f.phase === 'start') {
      if (open) close(open, f.atMs);
      open = f;
    } else if (open) {
      close(open, f.atMs);
      open = null;
    }
  }
  if (open) close(open, runEndMs);
  return spans;
}

/** Gaps between successive successes longer than GAP_AFTER_MS. */
export function gapsOf(successes: readonly number[]): [number, number][] {
  const out: [number, number][] = [];
  for (let i = 1; i < successes.length; i++) {
    if (successes[i]! - successes[i - 1]! > GAP_AFTER_MS) out.push([successes[i - 1]!, successes[i]!]);
  }
  return out;
}

export function analyseOutages(
  successes: readonly number[],
  spans: readonly FaultSpan[],
  leaderChanges: readonly LeaderChange[],
): OutageReport {
  const sorted = [...successes].sort((a, b) => a - b);
  const byFault = new Map<FaultSpan, number>(spans.map((s) => [s, 0]));
  const gaps: { from: number; to: number; cause: string }[] = [];
  let longest = 0;
  for (const [from, to] of gapsOf(sorted)) {
    longest = Math.max(longest, to - from);
    const cause =
      spans.find((s) => s.start >= from && s.start < to) ??
      spans.find((s) => s.start < from && s.end > from) ??
      spans.find((s) => s.end <= to && s.end >= from - HEAL_EFFECT_MS);
    if (cause) byFault.set(cause, byFault.get(cause)! + (to - from));
    const healed = cause !== undefined && cause.end <= from;
    gaps.push({ from, to, cause: cause ? `${faultClass(cause.kind, cause.role)}${healed ? ' (heal)' : ''}` : 'none' });
  }
  const perFault = spans.map((fault): FaultOutage => {
    const next = spans.find((s) => s.start > fault.start);
    const until = Math.min(fault.end + HEAL_EFFECT_MS, next?.start ?? Infinity);
    const elected = leaderChanges.find((c) => c.atMs > fault.start && c.atMs < until);
    const served = elected === undefined ? undefined : sorted.find((t) => t >= elected.atMs);
    return {
      cls: faultClass(fault.kind, fault.role),
      fault,
      outageMs: byFault.get(fault)!,
      electionMs: elected === undefined ? null : elected.atMs - fault.start,
      serveMs: elected === undefined || served === undefined ? null : served - elected.atMs,
    };
  });
  return { perFault, gaps, longestGapMs: longest };
}

export function median(xs: readonly number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** Rows: class, faults, median/max outage, median election, median new-leader→served. */
export function outageRows(perFault: readonly FaultOutage[]): string[][] {
  const rows: string[][] = [['fault', 'n', 'outage median', 'outage max', 'to new leader (median)', 'new leader → served (median)']];
  const classes = [...new Set(perFault.map((f) => f.cls))].sort();
  const ms = (x: number): string => (Number.isNaN(x) ? '-' : `${Math.round(x)} ms`);
  for (const cls of classes) {
    const fs = perFault.filter((f) => f.cls === cls);
    const outages = fs.map((f) => f.outageMs);
    const elections = fs.flatMap((f) => (f.electionMs === null ? [] : [f.electionMs]));
    const serves = fs.flatMap((f) => (f.serveMs === null ? [] : [f.serveMs]));
    rows.push([
      cls,
      String(fs.length),
      ms(median(outages)),
      ms(Math.max(...outages)),
      elections.length === 0 ? '-' : `${ms(median(elections))} (${elections.length})`,
      serves.length === 0 ? '-' : ms(median(serves)),
    ]);
  }
  return rows;
}

/** "became leader" lines of the nodes' pino logs, on the run clock. */
export function leaderChangesFromLogs(logs: readonly { node: string; text: string }[], originAbsMs: number): LeaderChange[] {
  const out: LeaderChange[] = [];
  for (const { node, text } of logs) {
    for (const line of text.split('\n')) {
      if (!line.includes('"became leader"')) continue;
      try {
        const rec = JSON.parse(line) as { time?: unknown; term?: unknown; msg?: unknown };
        if (rec.msg === 'became leader' && typeof rec.time === 'number') {
          out.push({ atMs: rec.time - originAbsMs, node, term: typeof rec.term === 'number' ? rec.term : 0 });
        }
      } catch {
        // a line cut by a kill
      }
    }
  }
  return out.sort((a, b) => a.atMs - b.atMs);
}
