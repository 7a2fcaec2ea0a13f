// The alert rules (ops/prometheus-alerts.yml): docs/operations.md lists them as they are, and
// promtool accepts them and passes their unit tests (ops/prometheus-alerts.test.yml). A real
// Prometheus firing them against a real cluster is a system suite: alerts-prometheus.test.ts.
// promtool comes with Debian's `prometheus` package (scripts/test-deps.sh installs it);
// without it the promtool test is skipped, saying so.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { ROOT } from '../support/cluster.js';
import { NO_PROMETHEUS, RULES, binary } from '../support/prometheus.js';

const RULE_TESTS = join(ROOT, 'ops/prometheus-alerts.test.yml');
const DOCS = join(ROOT, 'docs/operations.md');

const PROMTOOL = binary('promtool');

interface Rule {
  alert: string;
  expr: string;
  for: string;
  severity: string;
}

/** The rules, read from the file's fixed layout (one `expr:` line per rule). */
export function rulesOf(yml: string): Rule[] {
  const rules: Rule[] = [];
  for (const line of yml.split('\n')) {
    const alert = /^\s*- alert:\s*(\S+)\s*$/.exec(line);
    if (alert) rules.push({ alert: alert[1]!, expr: '', for: '–', severity: '' });
    const field = /^\s*(expr|for|severity):\s*(.+?)\s*$/.exec(line);
    if (field && rules.length > 0) rules.at(-1)![field[1] as 'expr' | 'for' | 'severity'] = field[2]!;
  }
  return rules;
}

/** The rows of the "What to alert on" table of docs/operations.md. */
function documentedRules(md: string): Rule[] {
  const section = md.slice(md.indexOf('### What to alert on'), md.indexOf('## Health checks'));
  return section
    .split('\n')
    .filter((l) => l.startsWith('| `Palisade'))
    .map((l) => {
      const cells = l.split(' | ').map((c) => c.replace(/^\| /, '').trim());
      const code = (c: string): string => c.replace(/^`|`$/g, '');
      return { alert: code(cells[0]!), expr: code(cells[1]!), for: cells[2]!, severity: cells[3]! };
    });
}

describe('alert rules', () => {
  test('docs/operations.md lists every rule of ops/prometheus-alerts.yml as it is, and no other', () => {
    const rules = rulesOf(readFileSync(RULES, 'utf8'));
    assert.ok(rules.length >= 9, `${rules.length} rules`);
    for (const needed of ['PalisadeQuorumLost', 'PalisadeNodeDown', 'PalisadeMetricsAbsent']) assert.ok(rules.some((r) => r.alert === needed), needed);
    assert.deepEqual(documentedRules(readFileSync(DOCS, 'utf8')), rules);
  });

  test('promtool accepts the rules and passes their unit tests', { skip: PROMTOOL === null ? NO_PROMETHEUS : false }, () => {
    const check = spawnSync(PROMTOOL!, ['check', 'rules', RULES], { encoding: 'utf8' });
    assert.equal(check.status, 0, check.stdout + check.stderr);
    const unit = spawnSync(PROMTOOL!, ['test', 'rules', RULE_TESTS], { encoding: 'utf8' });
    assert.equal(unit.status, 0, unit.stdout + unit.stderr);
    assert.match(unit.stdout, /SUCCESS/);
  });
});
