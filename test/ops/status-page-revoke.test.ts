// @system: a system suite (scripts/run-tests.mjs): run by `npm run test:system` and CI.
// The status page's sessions table and its revoke button, in headless Chromium against a real
// 3-node cluster with authentication: the page lists the sessions with what they hold, a
// revoke needs an admin token typed into the page (a token that is not one is refused), and a
// revoke from the page ends the session as `palisade session revoke` does: the holder's signal
// fires. The endpoint itself refuses a request without a token, one from another site's page
// or under another host name (the HTTP port's browser policy) or not said to be JSON, and
// refuses everyone when the cluster has no auth (any web page could otherwise revoke through
// the operator's browser).
// Needs Debian's `chromium` (test/support/chromium.ts), as test/ops/status-page.test.ts does.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, test } from 'node:test';
import { LockClient, SessionExpiredError } from '../../src/client/index.js';
import { launchChromium, type Browser } from '../support/chromium.js';
import { TestCluster, until } from '../support/cluster.js';

const TOKENS = { app: 'app-token-0123456789abcdef', ops: 'ops-admin-token-0123456789' };

const clusters: TestCluster[] = [];
const clients: LockClient[] = [];
let browser: Browser | null = null;

after(async () => {
  await browser?.close();
  await Promise.all(clients.map((c) => c.close().catch(() => {})));
  await Promise.all(clusters.map((c) => c.stop()));
});

/** A revoke POST as a program sends it; `headers` add to (or replace) its JSON content type
 *  and token (node:http: fetch would not send another Host). */
function revokeOverHttp(httpUrl: string, body: unknown, token?: string, headers: Record<string, string> = {}): Promise<{ status: number; body: { error?: string; index?: number } }> {
  const text = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      `${httpUrl}/api/sessions/revoke`,
      { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers } },
      (res) => {
        let data = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (data += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(data) as { error?: string; index?: number } }));
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

test('the sessions table lists holders; the page revokes with an admin token, and only with one', { timeout: 120_000 }, async () => {
  const c = await TestCluster.started({
    credentials: { token: TOKENS.ops },
    extraConfig: { auth: { tokens: [{ name: 'app', token: TOKENS.app }, { name: 'ops', token: TOKENS.ops, admin: true }] } },
  });
  clusters.push(c);
  const holder = await LockClient.connect({ endpoints: c.endpoints, authToken: TOKENS.app, label: 'stuck-on-page:77' });
  clients.push(holder);
  const lock = await holder.acquire('reports/daily');
  await holder.put('svc/reports', 'up', { session: true });
  const session = holder.sessionId!;

  browser = await launchChromium();
  const page = browser.page;
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${c.nodes[0]!.httpUrl}/`);
  const row = page.locator(`#sessions tr[data-session="${session}"]`);
  await row.waitFor({ timeout: 10_000 });
  const cells = await row.locator('td').allTextContents();
  assert.equal(cells[1], 'stuck-on-page:77');
  assert.equal(cells[2], 'app');
  assert.match(cells[5]!, new RegExp(`reports/daily #${lock.token}`));
  assert.equal(cells[7], 'svc/reports');

  // Without a token the page says one is needed and sends nothing.
  await row.locator('button.revoke').click();
  await until(async () => /needs an admin token/.test(await page.locator('#sessions-result').textContent() ?? ''), 5_000, 'the page to ask for a token');

  // A token that is not an admin token: refused by the cluster, the holder keeps its lock.
  page.once('dialog', (d) => void d.accept('from the page, wrong token'));
  await page.locator('#admin-token').fill(TOKENS.app);
  await row.locator('button.revoke').click();
  await until(async () => /not revoked: .*not an admin token/.test(await page.locator('#sessions-result').textContent() ?? ''), 10_000, 'the refusal');
  assert.equal(lock.signal.aborted, false);

  page.once('dialog', (d) => void d.accept('stuck, revoked from the status page'));
  await page.locator('#admin-token').fill(TOKENS.ops);
  await row.locator('button.revoke').click();
  await until(async () => new RegExp(`revoked session ${session} \\(entry \\d+\\)`).test(await page.locator('#sessions-result').textContent() ?? ''), 10_000, 'the revoke');
  await until(() => lock.signal.aborted, 10_000, 'the holder\'s signal');
  const reason = lock.signal.reason as Error;
  const why = reason instanceof SessionExpiredError ? reason : reason.cause;
  assert.ok(why instanceof SessionExpiredError);
  assert.match(why.message, /revoked by an operator \(token "ops"\): stuck, revoked from the status page/);
  await row.waitFor({ state: 'detached', timeout: 10_000 });
  assert.ok(c.logOf('n1').includes('"audit":"revokeSession"') && c.logOf('n1').includes('(status page)'), 'audit-logged by the node that served the page');
  assert.deepEqual(errors, []);

  // The endpoint without the page: no token, a bad body.
  assert.equal((await revokeOverHttp(c.nodes[1]!.httpUrl, { session: 1, reason: 'x' })).status, 401);
  // The port's browser policy holds for it as for every path: another site's page (its
  // Origin), a rebound host name, a body not said to be JSON are refused, admin token or not.
  const other = await LockClient.connect({ endpoints: c.endpoints, authToken: TOKENS.app });
  clients.push(other);
  const target = { session: other.sessionId, reason: 'from elsewhere' };
  assert.equal((await revokeOverHttp(c.nodes[1]!.httpUrl, target, TOKENS.ops, { origin: 'https://evil.example' })).status, 403);
  assert.equal((await revokeOverHttp(c.nodes[1]!.httpUrl, target, TOKENS.ops, { host: 'evil.example' })).status, 421);
  assert.equal((await revokeOverHttp(c.nodes[1]!.httpUrl, target, TOKENS.ops, { 'content-type': 'text/plain' })).status, 415);
  const listed = (await (await fetch(`${c.nodes[1]!.httpUrl}/api/sessions`)).json()) as { rows: { session: number }[] };
  assert.ok(listed.rows.some((r) => r.session === other.sessionId), 'none of them revoked the session');
  assert.equal((await revokeOverHttp(c.nodes[1]!.httpUrl, { session: 'one', reason: 'x' }, TOKENS.ops)).status, 400);
  assert.equal((await revokeOverHttp(c.nodes[1]!.httpUrl, { session, reason: 'again' }, TOKENS.ops)).status, 404, 'not open any more');
  const get = await fetch(`${c.nodes[1]!.httpUrl}/api/sessions/revoke`);
  assert.equal(get.status, 405);
});

test('with auth off the status page cannot revoke at all', { timeout: 60_000 }, async () => {
  const c = await TestCluster.started({ nodes: 1 });
  clusters.push(c);
  const holder = await LockClient.connect({ endpoints: c.endpoints });
  clients.push(holder);
  const r = await revokeOverHttp(c.nodes[0]!.httpUrl, { session: holder.sessionId, reason: 'x' }, 'anything-at-all');
  assert.equal(r.status, 403);
  assert.match(r.body.error ?? '', /no "auth"/);
  assert.notEqual(holder.sessionId, null);
  const listed = (await (await fetch(`${c.nodes[0]!.httpUrl}/api/sessions`)).json()) as { rows: { session: number }[] };
  assert.deepEqual(listed.rows.map((s) => s.session), [holder.sessionId]);
});
