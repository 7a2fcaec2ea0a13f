// bench/anchors.sh's closing table: reading bench-lib.mjs's JSON lines, CPU µs per cycle from
// a CPU percentage and a rate, and ratios to etcd and ZooKeeper. Made-up lines in the shape
// emit() writes (../shared/anchors/bench-lib.mjs): what is tested is the reading and the
// arithmetic.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpuMicrosPerOp, parseAnchorLine, parseAnchorLines, renderAnchorSummary, summarise } from '../../bench/lib/anchor-summary.js';

const latency = (p50: number) => ({ n: 100, mean: p50, p50, p99: p50 * 4, max: p50 * 9 });

/** One result as bench-lib.mjs's uncontended() returns it and emit() labels it. */
function line(system: string, label: string | undefined, test: string, opsPerSec: number, clientPct: number, serverPct: number | null, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    system,
    test,
    workers: 1,
    ops_per_s: opsPerSec,
    cycles: opsPerSec * 10,
    acquire_ms: latency(2),
    release_ms: latency(1),
    errors: 0,
    first_error: null,
    client_cpu_pct: clientPct,
    server_cpu_pct: serverPct,
    metrics: null,
    duration_s: 10,
    ...(label === undefined ? {} : { label }),
    ...extra,
  });
}

test('CPU µs per cycle: % of one core ÷ 100 × 1e6 µs/s ÷ cycles/s', () => {
  assert.equal(cpuMicrosPerOp(50, 100), 5_000); // half a core at 100 cycles/s: 5 ms each
  assert.equal(cpuMicrosPerOp(150, 1_000), 1_500);
  assert.equal(cpuMicrosPerOp(null, 100), null); // no server pids were given
  assert.equal(cpuMicrosPerOp(50, 0), null);
});

test('a result line is read for the fields the table uses; other lines are named and left out', () => {
  const r = parseAnchorLine(line('palisade', 'palisade', 'uncontended C=1', 200, 20, 60, { mutual_exclusion_violations: 1, fencing_token_regressions: 2, errors: 3 }));
  assert.deepEqual(r, {
    system: 'palisade',
    label: 'palisade',
    test: 'uncontended C=1',
    opsPerSec: 200,
    acquireP50Ms: 2,
    clientCpuPct: 20,
    serverCpuPct: 60,
    errors: 3,
    violations: 3,
  });
  assert.equal(parseAnchorLine('{"system":"palisade","te'), 'not JSON');
  assert.equal(parseAnchorLine('[1]'), 'not an object');
  assert.equal(parseAnchorLine('{"system":"x","test":"y"}'), 'no ops_per_s or client_cpu_pct');
  const { results, skipped } = parseAnchorLines(`${line('palisade', undefined, 'u', 1, 1, 1)}\n\n{oops\n`);
  assert.equal(results.length, 1);
  assert.deepEqual(skipped, ['line 3: not JSON']);
});

test('ratios to each reference on the same test, against the median of its rows', () => {
  const text = [
    line('palisade', 'palisade', 'uncontended C=1', 200, 20, 60), // server 3,000 µs, client 1,000 µs
    line('etcd v3lock RPC', 'etcd', 'uncontended C=1', 100, 25, 50), // 5,000 µs, 2,500 µs
    line('etcd v3lock RPC', 'etcd', 'uncontended C=1', 100, 25, 70), // 7,000 µs: the median is 6,000
    line('zookeeper Curator-style lock', 'zk', 'uncontended C=1', 80, 32, 80), // 10,000 µs, 4,000 µs
    line('palisade', 'palisade', 'uncontended C=64', 1_000, 50, null), // no reference ran C=64; no pids
  ].join('\n');
  const rows = summarise(parseAnchorLines(text).results);
  const [p, e1, , z, p64] = rows;
  assert.equal(p!.serverMicrosPerOp, 3_000);
  assert.equal(p!.clientMicrosPerOp, 1_000);
  assert.deepEqual(p!.vs['etcd'], { rate: 2, serverCpu: 0.5, clientCpu: 0.4 });
  assert.deepEqual(p!.vs['zk'], { rate: 2.5, serverCpu: 0.3, clientCpu: 0.25 });
  assert.equal(e1!.system, 'etcd: etcd v3lock RPC');
  assert.deepEqual(z!.vs['etcd'], { rate: 0.8, serverCpu: 10_000 / 6_000, clientCpu: 1.6 });
  assert.deepEqual(p64!.vs, {});
  assert.equal(p64!.serverMicrosPerOp, null);
  assert.equal(p64!.notes, 'no server pids');
  const table = renderAnchorSummary(rows);
  assert.match(table.split('\n')[0]!, /server CPU µs\/cycle \| client CPU µs\/cycle \| cycles\/s ×etcd \| server CPU ×etcd/);
  assert.match(table, /\| palisade +\| uncontended C=1 +\| 200 +\| 2\.00 +\| 3,000 +\| 1,000 +\| ×2\.00 +\| ×0\.50 +\| ×0\.40 +\| ×2\.50 +\| ×0\.30 +\| ×0\.25 /);
});

test('without etcd or ZooKeeper results the table has no ratio columns', () => {
  const table = renderAnchorSummary(summarise(parseAnchorLines(line('palisade', 'palisade', 'uncontended C=1', 200, 20, 60)).results));
  assert.doesNotMatch(table, /×etcd|×zk/);
});
