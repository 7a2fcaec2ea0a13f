// @system: a system suite (scripts/run-tests.mjs): run by `npm run test:system` and CI.
// The Go client (clients/go, standard library only) against real clusters: `go vet ./...`
// and `go test ./...` in its module with a 3-node cluster over plain HTTP (its last test
// SIGKILLs the leader while a lock is held and another session waits), and a cluster whose
// client port requires client certificates from a private CA and a bearer token. Skipped,
// saying so, only when there is no `go` (.ci/run installs Debian's golang-go).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ROOT, TestCluster } from '../support/cluster.js';
import { makePki, type TestPki } from '../security/certs.js';
import { httpBase } from '../http/http-client.js';
import { captured } from '../support/captured.js';
import { goEnv, haveGo } from '../support/go.js';

if (!haveGo) console.log('# the Go client tests are skipped: no `go` on PATH (apt-get install golang-go)');

const TOKEN = 'go-client-test-token-0123456789ab';

describe('the Go client', { skip: !haveGo && 'no `go` on PATH', timeout: 600_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'palisade-go-'));
  let plain: TestCluster;
  let secure: TestCluster;
  let pki: TestPki;

  before(async () => {
    pki = makePki();
    for (const id of ['n1', 'n2', 'n3', 'app']) pki.issue(id);
    const certs = { cert: `${pki.dir}/{id}.crt`, key: `${pki.dir}/{id}.key`, ca: pki.ca };
    [plain, secure] = await Promise.all([
      TestCluster.started(),
      TestCluster.started({
        secure: { client: true },
        credentials: { token: TOKEN, ca: pki.read(pki.ca), cert: pki.read(`${pki.dir}/app.crt`), key: pki.read(`${pki.dir}/app.key`) },
        extraConfig: {
          auth: { tokens: [{ name: 'app', token: TOKEN }] },
          tls: { client: { ...certs, requireClientCert: true } },
        },
      }),
    ]);
  });

  after(async () => {
    await Promise.all([plain?.stop(), secure?.stop()]);
    pki?.remove();
    rmSync(dir, { recursive: true, force: true });
  });

  it('passes go vet and go test against the clusters (the leader SIGKILL last)', async () => {
    const env = goEnv(dir, {
      PALISADE_ENDPOINTS: plain.nodes.map((n) => httpBase(n.clientUrl)).join(','),
      PALISADE_PIDS: plain.nodes.map((n) => `${n.id}:${plain.pid(n.id)}`).join(','),
      PALISADE_TLS_ENDPOINTS: secure.nodes.map((n) => httpBase(n.clientUrl)).join(','),
      PALISADE_CA: pki.ca,
      PALISADE_CERT: `${pki.dir}/app.crt`,
      PALISADE_KEY: `${pki.dir}/app.key`,
      PALISADE_ROGUE_CA: pki.rogueCa,
      PALISADE_TOKEN: TOKEN,
    });
    const { code, out } = await captured('sh', ['-c', 'go vet ./... && go test -count=1 -v ./...'], { cwd: join(ROOT, 'clients/go'), env });
    assert.equal(code, 0, out);
    assert.doesNotMatch(out, /--- SKIP/, out);
    assert.match(out, /--- PASS: TestLeaderSIGKILLWhileHoldingAndWaiting/);
    assert.match(out, /--- PASS: TestALockOverMutualTLSWithAPrivateCA/);
  });
});
