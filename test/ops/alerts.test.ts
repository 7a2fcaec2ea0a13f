// The alert rules (ops/prometheus-alerts.yml): docs/operations.md lists them as they are,
// promtool accepts them and passes their unit tests (ops/prometheus-alerts.test.yml), and a
// real Prometheus loaded with them, scraping a real 3-node cluster, fires PalisadeQuorumLost
// once two nodes are killed. The promtool and Prometheus tests need Debian's `prometheus`
// package (.ci/run installs it); without its binaries they are skipped, saying so.
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { ROOT, TestCluster, freePort, until } from '../support/cluster.js';

const RULES = join(ROOT, 'ops/prometheus-alerts.yml');
const RULE_TESTS = join(ROOT, 'ops/prometheus-alerts.test.yml');
const DOCS = join(ROOT, 'docs/operations.md');

/** A binary on the PATH (or Debian's place for it), or null. */
function binary(name: string): string | null {
  for (const p of [`/usr/bin/${name}`, `/usr/local/bin/${name}`]) if (existsSync(p)) return p;
  const which = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' });
  return which.status === 0 && which.stdout.trim() !== '' ? which.stdout.trim() : null;
}

const PROMTOOL = binary('promtool');
const PROMETHEUS = binary('prometheus');
const NO_PROMETHEUS = 'Debian\'s prometheus package is not installed (apt-get install prometheus; .ci/run does)';

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

interface PromAlert {
  labels: Record<string, string>;
  state: 'pending' | 'firing';
}

describe('a real Prometheus with the shipped rules', { skip: PROMETHEUS === null ? NO_PROMETHEUS : false, timeout: 300_000 }, () => {
  let cluster: TestCluster | undefined;
  let prometheus: ChildProcess | undefined;
  const dir = mkdtempSync(join(tmpdir(), 'palisade-prometheus-'));

  after(async () => {
    prometheus?.kill('SIGKILL');
    await cluster?.stop();
    if (!process.env.KEEP_TEST_DATA) rmSync(dir, { recursive: true, force: true });
  });

  async function api<T>(base: string, path: string): Promise<T> {
    const res = await fetch(base + path);
    const body = (await res.json()) as { status: string; data: T };
    assert.equal(body.status, 'success', JSON.stringify(body));
    return body.data;
  }

  test('fires PalisadeQuorumLost (and PalisadeNodeDown for each) when two of three nodes are killed', async () => {
    cluster = await TestCluster.started();
    const targets = cluster.nodes.map((n) => new URL(n.httpUrl).host);
    const port = await freePort();
    const config = join(dir, 'prometheus.yml');
    writeFileSync(
      config,
      [
        'global:',
        '  scrape_interval: 1s',
        '  scrape_timeout: 900ms',
        '  evaluation_interval: 1s',
        'rule_files:',
        `  - ${JSON.stringify(RULES)}`,
        'scrape_configs:',
        '  - job_name: palisade',
        '    static_configs:',
        `      - targets: ${JSON.stringify(targets)}`,
        '',
      ].join('\n'),
    );
    const log = openSync(join(dir, 'prometheus.log'), 'a');
    prometheus = spawn(PROMETHEUS!, [`--config.file=${config}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`], { stdio: ['ignore', log, log] });
    const base = `http://127.0.0.1:${port}`;
    const logTail = (): string => readFileSync(join(dir, 'prometheus.log'), 'utf8').slice(-2000);
    await until(async () => (await fetch(`${base}/-/ready`).catch(() => null))?.ok, 30_000, `Prometheus to be ready: ${logTail()}`);

    // The rules are loaded and every node is scraped; nothing fires on a healthy cluster.
    const groups = await api<{ groups: { rules: { name: string }[] }[] }>(base, '/api/v1/rules');
    assert.ok(groups.groups.flatMap((g) => g.rules.map((r) => r.name)).includes('PalisadeQuorumLost'), 'the shipped rules are loaded');
    await until(
      async () => {
        const r = await api<{ result: unknown[] }>(base, '/api/v1/query?query=' + encodeURIComponent('count(up{job="palisade"} == 1)'));
        return JSON.stringify(r.result).includes('"3"');
      },
      30_000,
      'Prometheus to scrape all three nodes',
    );
    const before = await api<{ alerts: PromAlert[] }>(base, '/api/v1/alerts');
    assert.deepEqual(before.alerts.filter((a) => a.labels.alertname === 'PalisadeQuorumLost'), []);

    const leader = await cluster.waitForLeader();
    const killed = cluster.nodes.filter((n) => n.id !== leader).map((n) => n.id);
    for (const id of killed) await cluster.signal(id, 'SIGKILL');

    // `for: 1m`, evaluated every second: firing a little over a minute after the kills.
    const firing = await until(
      async () => {
        const { alerts } = await api<{ alerts: PromAlert[] }>(base, '/api/v1/alerts');
        const quorum = alerts.find((a) => a.labels.alertname === 'PalisadeQuorumLost' && a.state === 'firing');
        const down = alerts.filter((a) => a.labels.alertname === 'PalisadeNodeDown' && a.state === 'firing');
        return quorum && down.length === 2 ? { quorum, down } : null;
      },
      150_000,
      'PalisadeQuorumLost to fire',
    );
    assert.equal(firing.quorum.labels.severity, 'critical');
    const killedHosts = killed.map((id) => new URL(cluster!.node(id).httpUrl).host).sort();
    assert.deepEqual(firing.down.map((a) => a.labels.instance).sort(), killedHosts);
  });
});
