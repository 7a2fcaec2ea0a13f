// The anchors' results (one JSON line per test, written by ../shared/anchors/bench-lib.mjs's
// emit()) as one table: per system and test the rate, the acquire p50, and the CPU each
// cycle cost the servers (all of a system's server processes together) and the client, in
// µs, so that "Palisade costs ×N etcd's CPU per cycle" is read off a column instead of being
// worked out from CPU percentages and rates. bench/anchors.sh prints it at the end of a run.
import { figure, int } from './format.js';
import { median } from './latency.js';
import { renderTable } from './table.js';

/** The fields of a bench-lib.mjs result this table reads. */
export interface AnchorResult {
  /** The anchor's own name: 'palisade', 'etcd v3lock RPC', 'zookeeper Curator-style lock', ... */
  readonly system: string;
  /** --label (bench/anchors.sh: palisade, etcd, zk), when given. */
  readonly label: string | null;
  /** 'uncontended C=1', 'uncontended C=64', 'contended W=16 blocking-FIFO', ... */
  readonly test: string;
  /** Cycles (uncontended) or handoffs (contended) per second over the window. */
  readonly opsPerSec: number;
  readonly acquireP50Ms: number | null;
  /** % of one core over the window: the client process, and the server pids summed (null
   *  when ANCHOR_SERVER_PIDS was not given). */
  readonly clientCpuPct: number;
  readonly serverCpuPct: number | null;
  readonly errors: number;
  readonly violations: number;
}

function record(v: unknown): Record<string, unknown> | null {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
}
const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

/** One line of the JSONL; a string saying what is wrong when it is not an anchor result. */
export function parseAnchorLine(line: string): AnchorResult | string {
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch {
    return 'not JSON';
  }
  const r = record(v);
  if (!r) return 'not an object';
  const { system, test, label } = r;
  const opsPerSec = num(r['ops_per_s']);
  const clientCpuPct = num(r['client_cpu_pct']);
  if (typeof system !== 'string' || typeof test !== 'string') return 'no system or test';
  if (opsPerSec === null || clientCpuPct === null) return 'no ops_per_s or client_cpu_pct';
  return {
    system,
    label: typeof label === 'string' ? label : null,
    test,
    opsPerSec,
    acquireP50Ms: num(record(r['acquire_ms'])?.['p50']),
    clientCpuPct,
    serverCpuPct: num(r['server_cpu_pct']),
    errors: num(r['errors']) ?? 0,
    violations: (num(r['mutual_exclusion_violations']) ?? 0) + (num(r['fencing_token_regressions']) ?? 0),
  };
}

/** Every result of a JSONL file, and what was wrong with the lines that are not results (a
 *  run interrupted mid-line). */
export function parseAnchorLines(text: string): { readonly results: AnchorResult[]; readonly skipped: string[] } {
  const results: AnchorResult[] = [];
  const skipped: string[] = [];
  text.split('\n').forEach((line, i) => {
    if (line.trim() === '') return;
    const r = parseAnchorLine(line);
    if (typeof r === 'string') skipped.push(`line ${i + 1}: ${r}`);
    else results.push(r);
  });
  return { results, skipped };
}

/** CPU µs per cycle from a % of one core and cycles per second: (pct / 100) s/s × 1e6 / rate. */
export function cpuMicrosPerOp(cpuPct: number | null, opsPerSec: number): number | null {
  return cpuPct === null || opsPerSec <= 0 ? null : (cpuPct * 1e4) / opsPerSec;
}

/** The systems the others are measured against, as bench/anchors.sh runs them: etcd's
 *  server-side Lock service and ZooKeeper with Curator's lock recipe. */
export const REFERENCES = [
  { name: 'etcd', is: (r: AnchorResult): boolean => r.system.startsWith('etcd v3lock') },
  { name: 'zk', is: (r: AnchorResult): boolean => r.system.startsWith('zookeeper') },
] as const;

export interface Ratios {
  readonly rate: number | null;
  readonly serverCpu: number | null;
  readonly clientCpu: number | null;
}

export interface SummaryRow {
  readonly system: string;
  readonly test: string;
  readonly opsPerSec: number;
  readonly acquireP50Ms: number | null;
  readonly serverMicrosPerOp: number | null;
  readonly clientMicrosPerOp: number | null;
  /** This row ÷ the reference on the same test (the median of its rows, if it ran more than
   *  once), per reference that ran the test. */
  readonly vs: Readonly<Record<string, Ratios>>;
  readonly notes: string;
}

const systemName = (r: AnchorResult): string => (r.label === null || r.label === r.system ? r.system : `${r.label}: ${r.system}`);
const quotient = (x: number | null, y: number | null): number | null => (x === null || y === null || y === 0 ? null : x / y);

export function summarise(results: readonly AnchorResult[]): SummaryRow[] {
  const rows = results.map((r) => ({
    r,
    serverMicrosPerOp: cpuMicrosPerOp(r.serverCpuPct, r.opsPerSec),
    clientMicrosPerOp: cpuMicrosPerOp(r.clientCpuPct, r.opsPerSec),
  }));
  const reference = (name: string, test: string, pick: (x: (typeof rows)[number]) => number | null): number | null => {
    const ref = REFERENCES.find((x) => x.name === name)!;
    return median(rows.filter((x) => ref.is(x.r) && x.r.test === test).map(pick).filter((v): v is number => v !== null));
  };
  return rows.map((x) => {
    const vs: Record<string, Ratios> = {};
    for (const ref of REFERENCES) {
      const rate = reference(ref.name, x.r.test, (y) => y.r.opsPerSec);
      if (rate === null) continue; // the reference did not run this test
      vs[ref.name] = {
        rate: quotient(x.r.opsPerSec, rate),
        serverCpu: quotient(x.serverMicrosPerOp, reference(ref.name, x.r.test, (y) => y.serverMicrosPerOp)),
        clientCpu: quotient(x.clientMicrosPerOp, reference(ref.name, x.r.test, (y) => y.clientMicrosPerOp)),
      };
    }
    return {
      system: systemName(x.r),
      test: x.r.test,
      opsPerSec: x.r.opsPerSec,
      acquireP50Ms: x.r.acquireP50Ms,
      serverMicrosPerOp: x.serverMicrosPerOp,
      clientMicrosPerOp: x.clientMicrosPerOp,
      vs,
      notes: [
        x.r.serverCpuPct === null ? 'no server pids' : '',
        x.r.errors ? `ERRORS ${x.r.errors}` : '',
        x.r.violations ? `VIOLATIONS ${x.r.violations}` : '',
      ].filter(Boolean).join('; '),
    };
  });
}

const times = (q: number | null | undefined): string => (q == null ? '' : `×${q.toFixed(2)}`);
const micros = (n: number | null): string => (n === null ? '' : int(n));

/** The table, with ratio columns only for the references that appear in the results. */
export function renderAnchorSummary(rows: readonly SummaryRow[]): string {
  const refs = REFERENCES.map((r) => r.name).filter((name) => rows.some((row) => name in row.vs));
  return renderTable(
    [
      'system',
      'test',
      'cycles/s',
      'acquire p50 ms',
      'server CPU µs/cycle',
      'client CPU µs/cycle',
      ...refs.flatMap((n) => [`cycles/s ×${n}`, `server CPU ×${n}`, `client CPU ×${n}`]),
      'notes',
    ],
    rows.map((r) => [
      r.system,
      r.test,
      int(r.opsPerSec),
      figure(r.acquireP50Ms),
      micros(r.serverMicrosPerOp),
      micros(r.clientMicrosPerOp),
      ...refs.flatMap((n) => [times(r.vs[n]?.rate), times(r.vs[n]?.serverCpu), times(r.vs[n]?.clientCpu)]),
      r.notes,
    ]),
  );
}
