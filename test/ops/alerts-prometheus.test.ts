// @system: a system suite (scripts/run-tests.mjs): run by `npm run test:system` and CI.
// A real Prometheus loaded with the shipped alert rules (ops/prometheus-alerts.yml), scraping
// a real 3-node cluster, fires PalisadeQuorumLost (and PalisadeNodeDown for each) once two
// nodes are killed: a minute and more of waiting on the rules' `for`. Needs Debian's
// `prometheus` package (scripts/test-deps.sh installs it); without its binary it is skipped,
// saying so. The rules' text and promtool's unit tests: alerts.test.ts.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { TestCluster, freePort, until } from '../support/cluster.js';
import { NO_PROMETHEUS, RULES, binary } from '../support/prometheus.js';

const PROMETHEUS = binary('prometheus');

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
