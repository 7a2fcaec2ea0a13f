// One table for the whole run, and the same figures as JSON.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AbbaReport } from './abba-report.js';
import type { LatencySummary } from './lib/latency.js';
import { median } from './lib/latency.js';
import type { OpCost, WindowCost } from './lib/node-sampler.js';
import { figure, int } from './lib/format.js';
import { renderTable } from './lib/table.js';
import { TARGETS } from './targets.js';
import { recoveries } from './figures.js';
import type { CaseOutcome } from './lib/case-outcome.js';

export type { CaseOutcome };

export interface BenchReport {
  readonly startedAt: string;
  readonly wallSeconds: number;
  readonly mode: 'quick' | 'full';
  readonly options: Readonly<Record<string, unknown>>;
  readonly machine: Readonly<Record<string, unknown>>;
  readonly cluster: Readonly<Record<string, unknown>>;
  readonly targets: typeof TARGETS;
  /** Empty for an ABBA comparison, whose runs are under `abba.runs`. */
  readonly cases: readonly CaseOutcome[];
  readonly abba?: AbbaReport;
}

interface Row {
  workload: string;
  figure: string;
  p50: string;
  p99: string;
  max: string;
  commits: string;
  fsyncs: string;
  cpu: string;
  target: string;
  checks: string;
}

const HEADER: Row = {
  workload: 'workload',
  figure: 'figure',
  p50: 'p50 ms',
  p99: 'p99 ms',
  max: 'max ms',
  commits: 'commits/op',
  fsyncs: 'fsync/commit',
  cpu: 'CPU %: client; nodes (*leader)',
  target: 'target (etcd 3.4)',
  checks: 'checks',
};

const ms = figure;
const ratio = (n: number | null | undefined, d = 2): string => (n == null ? '' : n.toFixed(d));
const mb = (b: number | null): string => (b === null ? '?' : `${(b / 2 ** 20).toFixed(0)} MB`);
const times = (x: number, target: number): string => `×${(x / target).toFixed(2)}`;

function latency(l: LatencySummary): Pick<Row, 'p50' | 'p99' | 'max'> {
  return { p50: ms(l.p50), p99: ms(l.p99), max: ms(l.max) };
}

function cpu(w: WindowCost): string {
  const nodes = Object.entries(w.cpuPct.nodes)
    .map(([id, pct]) => `${id}${id === w.leader ? '*' : ''} ${pct === null ? '-' : pct.toFixed(0)}`)
    .join(' ');
  return `${w.cpuPct.client.toFixed(0)}; ${nodes}`;
}

function cost(c: OpCost): Pick<Row, 'commits' | 'fsyncs'> {
  return { commits: ratio(c.commitsPerOp), fsyncs: ratio(c.fsyncsPerCommit, 3) };
}

/** CPU per committed entry (leader, followers' mean), when the window had a steady leader. */
function perCommit(c: OpCost): string {
  const { leader, followers } = c.cpuMicrosPerCommit;
  return leader === null || followers === null ? '' : `CPU/commit ${int(leader)} µs leader, ${int(followers)} µs follower`;
}

function errors(n: number, first: string | null): string {
  return n === 0 ? '' : `ERRORS ${n} (${first ?? '?'})`;
}

const blank: Row = { workload: '', figure: '', p50: '', p99: '', max: '', commits: '', fsyncs: '', cpu: '', target: '', checks: '' };

function rowsOf(o: CaseOutcome): Row[] {
  const rows = rowsOfResult(o);
  const t = o.terms;
  if (t && t.end > t.start && o.workload !== 'failover' && rows[0]) {
    const note = `ELECTIONS: term ${t.start}→${t.end}`;
    rows[0].checks = rows[0].checks ? `${rows[0].checks}; ${note}` : note;
  }
  return rows;
}

function rowsOfResult(o: CaseOutcome): Row[] {
  const r = o.result;
  if (!r) return [{ ...blank, workload: o.label, figure: 'FAILED', checks: (o.error ?? '').split('\n')[0]!.slice(0, 120) }];
  switch (r.kind) {
    case 'uncontended': {
      let target = '';
      if (r.clients === 1) target = `${TARGETS.uncontended1.cyclesPerSec}/s, p50 ${TARGETS.uncontended1.acquireP50Ms} ms: ${times(r.cyclesPerSec, TARGETS.uncontended1.cyclesPerSec)}`;
      if (r.clients === 64) target = `${int(TARGETS.uncontended64.cyclesPerSec)}/s, p99 ${TARGETS.uncontended64.acquireP99Ms} ms: ${times(r.cyclesPerSec, TARGETS.uncontended64.cyclesPerSec)}`;
      return [
        { ...blank, workload: `${o.label} acquire`, figure: `${int(r.cyclesPerSec)} cycles/s`, ...latency(r.acquireMs), ...cost(r.cost), cpu: cpu(r.window), target, checks: [perCommit(r.cost), errors(r.errors, r.firstError)].filter(Boolean).join('; ') },
        { ...blank, workload: '  release', ...latency(r.releaseMs) },
      ];
    }
    case 'contended': {
      const ok = r.mutualExclusionViolations === 0 && r.tokenRegressions === 0;
      return [
        {
          ...blank,
          workload: `${o.label} wait`,
          figure: `${int(r.handoffsPerSec)} handoffs/s`,
          ...latency(r.waitMs),
          ...cost(r.cost),
          cpu: cpu(r.window),
          target: `${TARGETS.contended16.handoffsPerSec}/s: ${times(r.handoffsPerSec, TARGETS.contended16.handoffsPerSec)}`,
          checks: [
            `grants/client ${r.grantsPerClientMin}–${r.grantsPerClientMax}`,
            ok ? `exclusion + tokens ok (${int(r.tokensChecked)})` : `VIOLATIONS ${r.mutualExclusionViolations}, TOKEN REGRESSIONS ${r.tokenRegressions}`,
            perCommit(r.cost),
            errors(r.errors, r.firstError),
          ].filter(Boolean).join('; '),
        },
        { ...blank, workload: '  release', ...latency(r.releaseMs) },
      ];
    }
    case 'raft':
      return [
        {
          ...blank,
          workload: `${o.label} put`,
          figure: `${int(r.proposalsPerSec)} proposals/s`,
          ...latency(r.putMs),
          ...cost(r.cost),
          cpu: cpu(r.window),
          checks: [
            `${ratio(r.entriesPerFsyncBatch, 1)} entries/fsync batch`,
            `${r.wireBytesPerEntryCopy === null ? '?' : int(r.wireBytesPerEntryCopy)} B/entry per follower`,
            perCommit(r.cost),
            errors(r.errors, r.firstError),
          ].filter(Boolean).join('; '),
        },
      ];
    case 'sessions': {
      const lost = r.expiredEvents + r.unknownOnKeepAlive + r.finalKeepAliveFailed;
      return [
        {
          ...blank,
          workload: `${o.label} keepalive`,
          figure: `leader ${ratio(r.leaderCpuPct, 0)} % CPU at ${int(r.keepAlivesPerSec)} keepalives/s`,
          ...latency(r.keepAliveMs),
          commits: '',
          fsyncs: '',
          cpu: cpu(r.window),
          target: r.sessions === 100_000 ? `leader ${TARGETS.sessions100kLeaderCpuPct.join('–')} %` : '',
          checks: [
            lost === 0 ? 'none expired' : `EXPIRED: ${r.expiredEvents} events, ${r.unknownOnKeepAlive} unknown, ${r.finalKeepAliveFailed} final`,
            `opened ${int(r.opensPerSec)}/s${r.openRetries ? ` (${r.openRetries} retried)` : ''}`,
            r.connectedTo.length === 1 && r.leader !== r.connectedTo[0] ? `LEADER MOVED ${r.connectedTo[0]}→${r.leader ?? '?'}: keepalives forwarded` : '',
            r.connectedTo.length > 1 ? `connections over ${r.connectedTo.join(', ')}` : 'connections to the leader',
            r.rssBytes ? `RSS ${Object.entries(r.rssBytes).map(([id, b]) => `${id}${id === r.leader ? '*' : ''} ${mb(b)}`).join(', ')}` : '',
            errors(r.errors, r.firstError),
          ].filter(Boolean).join('; '),
        },
      ];
    }
    case 'memory': {
      const rss = r.nodes.map((n) => `${n.id}${n.role === 'leader' ? '*' : ''} ${mb(n.loadedRssBytes)}`).join(', ');
      const base = r.nodes.map((n) => mb(n.baselineRssBytes)).join('/');
      return [
        {
          ...blank,
          workload: `${o.label} RSS`,
          figure: rss,
          checks: [
            `leader +${r.leaderBytesPerLock === null ? '?' : int(r.leaderBytesPerLock)} B/lock over ${base}`,
            `${int(r.locksGranted)} granted at ${int(r.acquiresPerSec)}/s${r.retries ? ` (${int(r.retries)} retried)` : ''}`,
            errors(r.errors, r.firstError),
          ].filter(Boolean).join('; '),
        },
      ];
    }
    case 'failover': {
      const row = (event: 'kill' | 'transfer', name: string, target: string): Row => {
        const { tries, ms: ok } = recoveries(r, event);
        const med = median(ok);
        const missed = tries - ok.length;
        return {
          ...blank,
          workload: name,
          figure: med === null ? 'no recovery' : `median ${ms(med)} ms over ${tries}`,
          p50: ms(med),
          max: ok.length ? ms(Math.max(...ok)) : '',
          target,
          checks: [missed ? `${missed} NOT RECOVERED` : 'all recovered', errors(r.errors, r.firstError)].filter(Boolean).join('; '),
        };
      };
      return [
        row('kill', 'failover SIGKILL leader → acquire', `median ${int(TARGETS.failoverKillMedianMs)} ms (hb 100/el 1000)`),
        row('transfer', 'failover transferLeader → acquire', ''),
      ];
    }
  }
}

export function renderCases(cases: readonly CaseOutcome[]): string {
  const keys = Object.keys(HEADER) as (keyof Row)[];
  return renderTable(
    keys.map((k) => HEADER[k]),
    cases.flatMap(rowsOf).map((r) => keys.map((k) => r[k])),
  );
}

/** Write bench-<timestamp>.json and latest.json (an ABBA comparison: abba-<timestamp>.json and
 *  abba-latest.json, so that latest.json stays a plain run's); returns the first path. */
export function writeReport(dir: string, report: BenchReport): string {
  mkdirSync(dir, { recursive: true });
  const stamp = report.startedAt.replace(/[:.]/g, '-');
  const [name, latest] = report.abba ? ['abba', 'abba-latest'] : ['bench', 'latest'];
  const path = join(dir, `${name}-${stamp}.json`);
  const text = JSON.stringify(report, null, 2) + '\n';
  writeFileSync(path, text);
  writeFileSync(join(dir, `${latest}.json`), text);
  return path;
}
