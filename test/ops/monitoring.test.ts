// The Grafana dashboard and the Prometheus alert rules in ops/ name only metrics a running
// node really exports (a renamed metric would leave a dashboard blank and an alert silent).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { ROOT, TestCluster, until } from '../support/cluster.js';
import { find, metricsOf, type Exposition } from './helpers.js';

let cluster: TestCluster;
let exposition: Exposition;

before(async () => {
  cluster = await TestCluster.started();
  const leader = await cluster.waitForLeader();
  // The leader's peer series (round trips need a heartbeat answered) are there once it leads.
  exposition = await until(async () => {
    const e = await metricsOf(cluster.node(leader).httpUrl);
    return find(e, 'palisade_raft_peer_rtt_seconds_count').length > 0 ? e : null;
  }, 10_000, 'peer round trips measured');
});
after(() => cluster?.stop());

function dashboardExprs(): string[] {
  const d = JSON.parse(readFileSync(join(ROOT, 'ops/grafana-dashboard.json'), 'utf8')) as { panels: { targets?: { expr: string }[] }[] };
  return d.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));
}

function alertExprs(): { alert: string; expr: string }[] {
  const out: { alert: string; expr: string }[] = [];
  let alert = '';
  for (const line of readFileSync(join(ROOT, 'ops/prometheus-alerts.yml'), 'utf8').split('\n')) {
    const a = /^\s*- alert:\s*(\S+)/.exec(line);
    if (a) alert = a[1]!;
    const e = /^\s*expr:\s*(.+)$/.exec(line);
    if (e) out.push({ alert, expr: e[1]! });
  }
  return out;
}

/** Metric names in a PromQL expression: identifiers outside label matchers and strings. */
function metricNames(expr: string): string[] {
  const bare = expr.replace(/"[^"]*"/g, '""').replace(/\{[^}]*\}/g, '{}');
  return [...bare.matchAll(/\b(palisade_[a-z0-9_]+|process_[a-z0-9_]+|nodejs_[a-z0-9_]+)\b/g)].map((m) => m[1]!);
}

function exported(name: string): boolean {
  return exposition.types.has(name) || exposition.samples.some((s) => s.name === name);
}

test('every metric the Grafana dashboard queries is exported by a node', () => {
  const exprs = dashboardExprs();
  assert.ok(exprs.length >= 10, `${exprs.length} queries`);
  const missing = [...new Set(exprs.flatMap(metricNames))].filter((n) => !exported(n));
  assert.deepEqual(missing, []);
});

test('every metric the alert rules use is exported by a node; the rules cover the failures an operator must hear of', () => {
  const rules = alertExprs();
  const names = rules.map((r) => r.alert);
  for (const needed of ['PalisadeQuorumLost', 'PalisadeNodeWithoutLeader', 'PalisadeFollowerNotCatchingUp', 'PalisadeSlowFsync', 'PalisadeSessionExpiryStorm']) {
    assert.ok(names.includes(needed), `no ${needed} rule`);
  }
  for (const r of rules) {
    const used = metricNames(r.expr);
    // Rules on `up` (Prometheus's own series for each target) need no metric of ours.
    assert.ok(used.length > 0 || /\bup\{job="palisade"\}/.test(r.expr), `${r.alert}: names no palisade metric and no target's up`);
    assert.deepEqual(used.filter((n) => !exported(n)), [], `${r.alert}: ${r.expr}`);
  }
});
