// Human-readable report of a check: what the history contained, the verdict, and for a
// failure the window as a table one can reason about with a pencil.

import { OP_TYPES, sessionOf, type Operation, type Outcome } from './history.js';
import type { CheckResult } from './check.js';

const OUTCOMES: readonly Outcome[] = ['ok', 'fail', 'unknown'];

function table(rows: readonly (readonly string[])[]): string {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  return rows.map((r) => r.map((cell, c) => cell.padEnd(widths[c]!)).join('  ').trimEnd()).join('\n');
}

function compact(value: unknown): string {
  if (value === undefined) return '';
  const s = JSON.stringify(value);
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}

function describeArgs(op: Operation): string {
  switch (op.op) {
    case 'acquire':
    case 'tryAcquire':
      return `${op.args.lock} ${op.args.mode}${op.args.limit === undefined ? '' : ` limit=${op.args.limit}`}`;
    case 'release':
      return `${op.args.lock} token=${op.args.token}`;
    case 'read':
      return op.args.lock;
    case 'sessionExpired':
      return `session=${String(op.args.session)}`;
    case 'campaign':
    case 'proclaim':
      return `${op.args.election} value=${compact(op.args.value)}${'token' in op.args && op.args.token !== undefined ? ` token=${op.args.token}` : ''}`;
    case 'resign':
      return `${op.args.election}${op.args.token === undefined ? '' : ` token=${op.args.token}`}`;
    case 'leader':
      return op.args.election;
    case 'fencedWrite':
      return `${op.args.lock} token=${op.args.token} value=${compact(op.args.value)}`;
  }
}

function describeResult(op: Operation): string {
  if (op.outcome !== 'ok') return '';
  if (op.op === 'read' && op.result !== undefined) {
    const holders = op.result.holders.map((h) => `${String(h.session)}@${h.token}`);
    return `holders=[${holders.join(', ')}]`;
  }
  return compact(op.result);
}

/** The operations as a table, times relative to `t0` (default: the first invocation shown). */
export function formatOperations(ops: readonly Operation[], t0 = Math.min(...ops.map((o) => o.invokeMs))): string {
  if (ops.length === 0) return '(none)';
  const rel = (t: number | null): string => {
    if (t === null) return '∞';
    const d = Math.round((t - t0) * 1000) / 1000;
    return d < 0 ? String(d) : `+${d}`;
  };
  const rows: string[][] = [['id', 'process', 'session', 'op', 'args', 'invoke', 'complete', 'outcome', 'result']];
  for (const op of [...ops].sort((a, b) => a.invokeMs - b.invokeMs)) {
    rows.push([
      String(op.id),
      String(op.process),
      sessionOf(op) ?? '',
      op.op,
      describeArgs(op),
      rel(op.invokeMs),
      op.outcome === 'unknown' ? `${rel(op.completeMs)} (open)` : rel(op.completeMs),
      op.outcome,
      describeResult(op),
    ]);
  }
  return `${table(rows)}\n(times in ms relative to ${t0})`;
}

/** Counts of operations by type and outcome. */
export function formatSummary(history: readonly Operation[]): string {
  const rows: string[][] = [['op', ...OUTCOMES, 'total']];
  const totals = OUTCOMES.map(() => 0);
  for (const type of OP_TYPES) {
    const ofType = history.filter((o) => o.op === type);
    if (ofType.length === 0) continue;
    const counts = OUTCOMES.map((outcome) => ofType.filter((o) => o.outcome === outcome).length);
    counts.forEach((c, i) => (totals[i]! += c));
    rows.push([type, ...counts.map(String), String(ofType.length)]);
  }
  rows.push(['all', ...totals.map(String), String(history.length)]);
  return table(rows);
}

function verdictLine(result: CheckResult): string {
  if (result.valid === true) return 'verdict: LINEARIZABLE';
  if (result.valid === 'unknown') return `verdict: UNKNOWN — ${result.reason}`;
  return `verdict: NOT LINEARIZABLE — ${result.kind} "${result.lock}" (${result.check})`;
}

export function formatReport(history: readonly Operation[], result: CheckResult): string {
  const s = result.stats;
  const lines = [
    'Palisade history check',
    '',
    formatSummary(history),
    '',
    `objects checked: ${s.objects}; search steps: ${s.steps}; time: ${Math.round(s.elapsedMs)} ms`,
    verdictLine(result),
  ];
  if (result.valid === false) {
    lines.push('', `reason: ${result.reason}`, '', `failing window (${result.window.length} operations${result.windowMinimal ? ', minimal' : ''}):`);
    const t0 = Math.min(...result.window.map((o) => o.invokeMs));
    lines.push(formatOperations(result.window, t0));
    if (result.diagnosis !== undefined) {
      const d = result.diagnosis;
      const shown = d.linearized.slice(-12).map((o) => `#${String(o.id)}`);
      const earlier = d.linearized.length - shown.length;
      lines.push(
        '',
        `longest consistent order: ${d.linearized.length === 0 ? '(nothing)' : `${earlier > 0 ? `(${earlier} earlier) → ` : ''}${shown.join(' → ')}`}`,
        `then #${String(d.stuck.id)} (${d.stuck.op}) cannot take effect; state there: ${d.state}`,
      );
    }
    if (result.context.length > 0) {
      lines.push('', `around the window on ${result.kind} "${result.lock}" (not needed for the failure):`, formatOperations(result.context, t0));
    }
  }
  return lines.join('\n');
}
