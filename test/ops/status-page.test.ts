// @system: a system suite (scripts/run-tests.mjs): run by `npm run test:system` and CI.
// The status page in headless Chromium against a real 3-node cluster: a lock taken with the
// SDK appears with its token, and after the leader is SIGKILLed the page shows the new one.
// Needs Debian's `chromium` (/usr/bin/chromium, or PALISADE_CHROMIUM); .ci/run installs it.
// Without it this test FAILS, on purpose: a status page nobody loads is not tested.
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import { LockClient } from '../../src/client/index.js';
import { launchChromium, type Browser } from '../support/chromium.js';
import { ROOT, TestCluster } from '../support/cluster.js';

const RESULTS = join(ROOT, 'test-results');
const DOCS_SCREENSHOT = join(ROOT, 'docs/status-page.png');

let cluster: TestCluster | null = null;
let browser: Browser | null = null;
let context: BrowserContext | null = null;
const clients: LockClient[] = [];

after(async () => {
  await browser?.close();
  await Promise.all(clients.map((c) => Promise.race([c.close().catch(() => {}), new Promise((r) => setTimeout(r, 2_000))])));
  await cluster?.stop();
});

/** Into test-results/, and into docs/ with UPDATE_SCREENSHOT (a test run leaves the tree clean). */
async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(RESULTS, { recursive: true });
  const shot = join(RESULTS, name);
  await page.screenshot({ path: shot, fullPage: true });
  if (process.env.UPDATE_SCREENSHOT) copyFileSync(shot, join(ROOT, 'docs', name));
}

async function openBrowser(): Promise<Page> {
  browser = await launchChromium();
  context = browser.context;
  return browser.page;
}

test('status page: a lock appears with its token; after SIGKILL of the leader the new leader shows', { timeout: 90_000 }, async (t) => {
  const page = await openBrowser();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));

  cluster = await TestCluster.create();
  await cluster.startAll();
  const oldLeader = await cluster.waitForLeader();
  // The page is served by a follower: it must outlive the leader we kill.
  const pageNode = cluster.nodes.find((n) => n.id !== oldLeader)!;
  await page.goto(`${pageNode.httpUrl}/`);
  await page.locator('#conn[data-state="live"]').waitFor({ timeout: 5_000 });
  await page.locator(`#nodes tr.leader[data-node="${oldLeader}"]`).waitFor({ timeout: 5_000 });
  assert.equal(await page.locator('#nodes tbody tr').count(), 3);

  // Locks and an election, taken through the SDK.
  const endpoints = cluster.endpoints;
  const a = await LockClient.connect({ endpoints, ttlMs: 30_000 });
  const b = await LockClient.connect({ endpoints, ttlMs: 30_000 });
  clients.push(a, b);
  const lock = await a.acquire('orders/42');
  const grantedAt = performance.now();
  const tokenCell = page.locator('#locks tr[data-lock="orders/42"] [data-testid="token"]');
  await tokenCell.filter({ hasText: String(lock.token) }).waitFor({ timeout: 2_000 });
  t.diagnostic(`lock orders/42 (token ${lock.token}) shown ${Math.round(performance.now() - grantedAt)} ms after acquire() returned`);
  const waiting = b.acquire('orders/42').catch(() => null); // queued behind a
  await b.acquire('reports/daily', { mode: 'shared' });
  await a.acquire('reports/daily', { mode: 'shared' });
  await a.election('scheduler').campaign('worker-a');
  await page.locator('#locks tr[data-lock="orders/42"]').filter({ hasText: 'next: s' }).waitFor({ timeout: 2_000 });
  await page.locator('#elections tr[data-election="scheduler"]').waitFor({ timeout: 2_000 });

  // Failover: SIGKILL the leader and time how long the page takes to show a new one.
  const killedAt = performance.now();
  await cluster.signal(oldLeader, 'SIGKILL');
  await page.locator(`#nodes tr[data-node="${oldLeader}"][data-role="unreachable"]`).waitFor({ timeout: 5_000 });
  const unreachableMs = Math.round(performance.now() - killedAt);
  await page.locator(`#nodes tr.leader:not([data-node="${oldLeader}"])`).waitFor({ timeout: 10_000 });
  const newLeaderMs = Math.round(performance.now() - killedAt);
  const shown = await page.locator('#nodes tr.leader').getAttribute('data-node');
  const actual = await cluster.waitForLeader(10_000, [oldLeader]);
  assert.equal(shown, actual, 'the page shows the leader the cluster agrees on');
  await page.locator(`#banner[data-leader="${actual}"]`).filter({ hasText: `was ${oldLeader}` }).waitFor({ timeout: 2_000 });
  // The lock table is replicated state: the lock is still there with the same token.
  await tokenCell.filter({ hasText: String(lock.token) }).waitFor({ timeout: 2_000 });
  await page.locator('#events li[data-kind="leaderChanged"]').filter({ hasText: `leader is now ${actual}` }).first().waitFor({ timeout: 2_000 });

  const report = `leader ${oldLeader} SIGKILLed: page showed it unreachable after ${unreachableMs} ms and the new leader ${actual} after ${newLeaderMs} ms`;
  t.diagnostic(report);

  // Let the surviving follower's row catch up (peers are polled every 500 ms) so the
  // screenshot shows the cluster settled under its new leader.
  await page.locator('#nodes tr[data-role="follower"]').filter({ hasText: actual }).waitFor({ timeout: 3_000 });
  mkdirSync(RESULTS, { recursive: true });
  const shot = join(RESULTS, 'status-page.png');
  await page.screenshot({ path: shot, fullPage: true });
  // The README's picture is refreshed on request only, so a test run leaves the tree clean.
  if (process.env.UPDATE_SCREENSHOT) copyFileSync(shot, DOCS_SCREENSHOT);

  // Danger at a glance: one node down leaves no failure to spare.
  const health = page.locator('#health');
  await health.filter({ hasText: '2 of 3 up: one more failure stops writes' }).waitFor({ timeout: 3_000 });
  assert.equal(await health.getAttribute('data-danger'), 'degraded');
  assert.equal(await page.locator('#conn').getAttribute('data-state'), 'live');
  await screenshot(page, 'status-page-one-down.png');

  // A second node down: no quorum. The page (served by the survivor) says so in red, and the
  // badge is not a green "live" while there is no leader.
  const other = cluster.nodes.find((n) => n.id !== oldLeader && n.id !== pageNode.id)!;
  await cluster.signal(other.id, 'SIGKILL');
  await health.filter({ hasText: '1 of 3 up: no quorum' }).waitFor({ timeout: 10_000 });
  assert.equal(await health.getAttribute('data-danger'), 'down');
  await page.locator('#conn[data-state="noleader"]').waitFor({ timeout: 10_000 });
  assert.match((await page.locator('#conn').textContent()) ?? '', /no leader/);
  await screenshot(page, 'status-page-no-quorum.png');

  // Opened after the failure: the first view already says it.
  const late = await context!.newPage();
  late.on('pageerror', (e) => errors.push(e.message));
  const favicon = await late.goto(`${pageNode.httpUrl}/favicon.ico`);
  assert.equal(favicon?.status(), 200);
  await late.goto(`${pageNode.httpUrl}/`);
  assert.ok(await late.locator('#prev').isDisabled(), 'the pager starts disabled');
  assert.ok(await late.locator('#next').isDisabled(), 'the pager starts disabled');
  await late.locator('#health[data-danger="down"]').filter({ hasText: 'no quorum' }).waitFor({ timeout: 5_000 });
  assert.deepEqual(errors, [], 'no script errors on the page');
  void waiting;
});
