// What a run prints: the summary table, and for a failure the context around the failing
// window (the faults active then, the workers' notes, the errors behind the outcomes).
import { formatSummary, type Operation } from './checker/index.js';
import { FAULT_KINDS, type FaultKind } from './nemesis.js';
import type { Availability } from './probe.js';
import { DEADLINE_BOUND_MS, type HeartbeatResult } from './heartbeat.js';
import { outageRows, type OutageReport } from './outage.js';
import type { FaultRecord, NoteRecord, RecordedOperation } from './recorder.js';

export function table(rows: readonly (readonly string[])[]): string {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  return rows.map((r) => r.map((cell, c) => cell.padEnd(widths[c]!)).join('  ').trimEnd()).join('\n');
}

export function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

export interface RunFacts {
  readonly seed: number;
  readonly nodes: number;
  readonly clients: number;
  readonly durationMs: number;
  readonly history: readonly Operation[];
  readonly faults: ReadonlyMap<FaultKind, number>;
  readonly availability: Availability;
  /** From the final heal to the first write through the log; null if it never came. */
  readonly recoveryMs: number | null;
  readonly fencedAccepted: number;
  readonly fencedRejected: number;
  readonly sessions: number;
  readonly clockSlackMs: number;
  /** The checker's effort, when it ran. */
  readonly check: { readonly objects: number; readonly steps: number; readonly elapsedMs: number } | null;
  readonly outages: OutageReport | null;
  readonly heartbeat: HeartbeatResult | null;
  readonly verdict: string;
}

/** The heartbeat client's view: outage per fault class, the longest gap, deadline overruns. */
export function formatHeartbeat(outages: OutageReport | null, hb: HeartbeatResult | null): string {
  if (outages === null || hb === null) return 'heartbeat: did not run';
  const worst = hb.overruns.length === 0 ? '' : `, worst settled after ${Math.round(Math.max(...hb.overruns))} ms`;
  return [
    `heartbeat (own lock, waitMs 1000, every 100 ms): ${hb.successes.length}/${hb.attempts} granted, ${hb.timeouts} LockTimeoutError, ${hb.otherErrors} other errors, ${hb.slowReleases} releases over 1 s`,
    `  deadline overruns (settled > waitMs + ${DEADLINE_BOUND_MS} ms): ${hb.overruns.length}${worst}`,
    `  longest gap between grants: ${Math.round(outages.longestGapMs)} ms; outage per fault (gaps > 250 ms, by the fault under which they began):`,
    table(outageRows(outages.perFault)).replace(/^/gm, '  '),
  ].join('\n');
}

export function formatRunSummary(f: RunFacts): string {
  const faultRows: string[][] = [['fault', 'injected']];
  let totalFaults = 0;
  for (const kind of FAULT_KINDS) {
    const n = f.faults.get(kind) ?? 0;
    totalFaults += n;
    faultRows.push([kind, String(n)]);
  }
  faultRows.push(['all', String(totalFaults)]);
  const a = f.availability;
  return [
    `seed ${f.seed} · ${f.nodes} nodes · ${f.clients} client processes · ${seconds(f.durationMs)} of faults`,
    '',
    formatSummary(f.history),
    '',
    table(faultRows),
    '',
    `time unavailable (probe reads): ${seconds(a.unavailableMs)} in ${a.gaps.length} gap${a.gaps.length === 1 ? '' : 's'}, longest ${seconds(a.longestGapMs)}`,
    `recovery after the final heal: ${f.recoveryMs === null ? 'NONE within the bound' : seconds(f.recoveryMs)}`,
    `fenced writes: ${f.fencedAccepted} accepted, ${f.fencedRejected} refused for a stale token`,
    `sessions: ${f.sessions}; clock slack between processes: ${f.clockSlackMs} ms`,
    formatHeartbeat(f.outages, f.heartbeat),
    f.check === null ? 'check: did not run' : `check: ${f.check.objects} objects, ${f.check.steps} search steps, ${seconds(f.check.elapsedMs)}`,
    `verdict: ${f.verdict}`,
  ].join('\n');
}

/** Faults active during [from, to], and notes of the window's processes then. */
export function windowContext(
  window: readonly RecordedOperation[],
  faults: readonly FaultRecord[],
  notes: readonly NoteRecord[],
): string {
  if (window.length === 0) return '';
  const from = Math.min(...window.map((o) => o.invokeMs)) - 1_000;
  const to = Math.max(...window.map((o) => o.completeMs ?? o.invokeMs)) + 500;
  const lines: string[] = [];
  const active = faultSpans(faults).filter((s) => s.start <= to && (s.end ?? Infinity) >= from);
  lines.push(`faults around the window (run clock, ms):`);
  if (active.length === 0) lines.push('  (none)');
  for (const s of active) lines.push(`  ${s.start.toFixed(0)} → ${s.end === null ? 'end of run' : s.end.toFixed(0)}  ${s.kind}: ${s.detail}`);
  const errors = window.filter((o) => o.error !== undefined);
  if (errors.length > 0) {
    lines.push('errors behind the outcomes:');
    for (const o of errors) lines.push(`  #${String(o.id)} ${o.op} ${o.outcome}: ${o.error}`);
  }
  const processes = new Set(window.map((o) => String(o.process).replace(/\/lease$/, '')));
  const near = notes.filter((n) => n.atMs >= from && n.atMs <= to && (processes.has(n.process) || n.process === 'harness'));
  if (near.length > 0) {
    lines.push('notes:');
    for (const n of near) lines.push(`  ${n.atMs.toFixed(0)} ${n.process}: ${n.text}`);
  }
  return lines.join('\n');
}

interface FaultSpan {
  readonly kind: string;
  readonly start: number;
  readonly end: number | null;
  readonly detail: string;
}

function faultSpans(faults: readonly FaultRecord[]): FaultSpan[] {
  const spans: FaultSpan[] = [];
  let open: FaultRecord | null = null;
  for (const f of [...faults].sort((a, b) => a.atMs - b.atMs)) {
    if (f.phase === 'start') {
      if (open) spans.push({ kind: open.kind, start: open.atMs, end: f.atMs, detail: open.detail });
      open = f;
    } else if (open) {
      spans.push({ kind: open.kind, start: open.atMs, end: f.atMs, detail: `${open.detail}; ${f.detail}` });
      open = null;
    }
  }
  if (open) spans.push({ kind: open.kind, start: open.atMs, end: null, detail: open.detail });
  return spans;
}
