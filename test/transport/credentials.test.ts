// New secrets and certificates for running peer links (PeerTransport.setCredentials, what a
// config reload calls): a rotation in the documented order keeps every link working at every
// step; removing a secret cuts the links it keyed; a step taken out of order shows at once as
// a refused link, and heals when the other side catches up; new certificates are used by the
// listener and the dialer alike.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { after, afterEach, describe, test } from 'node:test';
import type { Message, NodeId } from '../../src/raft/types.js';
import type { PeerTransport, PeerTransportOptions } from '../../src/transport/peer.js';
import { PeerSecrets } from '../../src/transport/peer-secrets.js';
import { tlsMaterialProblem, type TlsMaterial } from '../../src/transport/tls.js';
import { makePki } from '../security/certs.js';
import { testPeerTransport, waitFor, type LogLine } from './helpers.js';

const CLUSTER = 'credentials-test';
const OLD = 'old-secret-0123456789abcdef';
const NEW = 'new-secret-0123456789abcdef';

interface Node {
  readonly id: NodeId;
  readonly t: PeerTransport;
  readonly url: string;
  readonly got: Message[];
  readonly lines: LogLine[];
}

const running: PeerTransport[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((t) => t.stop()));
});

async function startNode(id: NodeId, secrets: string[], overrides: Partial<PeerTransportOptions> = {}): Promise<Node> {
  const { t, lines } = testPeerTransport({ clusterId: CLUSTER, selfId: id, secrets, ...overrides });
  const got: Message[] = [];
  t.on('raft', (_from, msgs) => got.push(...msgs));
  const { port } = await t.start();
  running.push(t);
  return { id, t, url: `${overrides.tls ? 'wss' : 'ws'}://127.0.0.1:${port}`, got, lines };
}

function connect(nodes: readonly Node[]): void {
  for (const n of nodes) n.t.setPeers(new Map(nodes.filter((o) => o !== n).map((o) => [o.id, o.url])));
}

let term = 0;
/** A heartbeat each way arrives: the link works (whichever socket carries it now). */
async function exchange(a: Node, b: Node, what: string): Promise<void> {
  term += 1;
  const t = term;
  await waitFor(`${what}: a message each way`, () => {
    if (!a.got.some((m) => m.term === t)) b.t.send(a.id, [{ type: 'heartbeat', from: b.id, to: a.id, term: t, commit: 0 }]);
    if (!b.got.some((m) => m.term === t)) a.t.send(b.id, [{ type: 'heartbeat', from: a.id, to: b.id, term: t, commit: 0 }]);
    return a.got.some((m) => m.term === t) && b.got.some((m) => m.term === t);
  });
}

const remade = (n: Node): number => n.lines.filter((l) => l.msg === 'credentials changed; making the peer link again').length;

describe('PeerSecrets', () => {
  test('proves the first, accepts any, and gives a key per secret, the first one first', () => {
    const s = new PeerSecrets([NEW, OLD]);
    assert.equal(s.sending, NEW);
    assert.equal(s.find((x) => x === OLD), OLD);
    assert.equal(s.find(() => false), undefined);
    const tried: string[] = [];
    s.find((x) => (tried.push(x), true));
    assert.deepEqual(tried, [NEW, OLD], 'every secret is tried whatever matches');
    const keys = s.candidateKeys('backup');
    assert.equal(keys.length, 2);
    assert.deepEqual(keys[0], new PeerSecrets([NEW]).candidateKeys('backup')[0]);
    assert.deepEqual(keys[1], new PeerSecrets([OLD]).candidateKeys('backup')[0]);
    assert.notDeepEqual(keys[0], s.candidateKeys('other purpose')[0]);
    assert.throws(() => new PeerSecrets([]));
    assert.throws(() => new PeerSecrets([OLD, OLD]));
  });
});

describe('a secret rotation on running links', () => {
  test('in the documented order, the link works at every step, and ends keyed by the new secret', async () => {
    // 'a' dials 'b' (the lower id dials).
    const a = await startNode('a', [OLD]);
    const b = await startNode('b', [OLD]);
    connect([a, b]);
    await exchange(a, b, 'before');
    // 1. The new secret second, one node after the other: both still prove the old one.
    for (const n of [b, a]) {
      n.t.setCredentials({ secrets: [OLD, NEW] });
      await exchange(a, b, `${n.id} accepts the new secret`);
    }
    assert.equal(remade(a) + remade(b), 0, 'adding a secret second changes no link');
    // 2. The new secret first: a remakes the link it dials, proving the new secret, which b accepts.
    a.t.setCredentials({ secrets: [NEW, OLD] });
    await waitFor('a remade its link', () => remade(a) === 1);
    await exchange(a, b, 'a proves the new secret');
    b.t.setCredentials({ secrets: [NEW, OLD] });
    await exchange(a, b, 'both prove the new secret');
    assert.equal(remade(b), 0, 'b dials nobody: its links were proved by a');
    // 3. The old secret removed: the link, keyed by the new one since step 2, stays.
    for (const n of [a, b]) {
      n.t.setCredentials({ secrets: [NEW] });
      await exchange(a, b, `${n.id} holds only the new secret`);
    }
    assert.equal(remade(a), 1);
    assert.equal(remade(b), 0);
    assert.deepEqual([...a.t.refusedLinks()], []);
  });

  test('removing a secret cuts the links it keyed; a dialer still proving it is refused, and says so until it moves on', async () => {
    const a = await startNode('a', [OLD]);
    const b = await startNode('b', [OLD, NEW]);
    connect([a, b]);
    await exchange(a, b, 'before');
    const connects = a.t.stats().connects;
    b.t.setCredentials({ secrets: [NEW] });
    await waitFor('the link keyed by the removed secret is cut and refused', () => a.t.refusedLinks().has('b'));
    assert.match(a.t.refusedLinks().get('b')!, /did not prove the cluster secret/);
    assert.deepEqual(a.t.connectedPeers(), []);
    assert.ok(b.lines.some((l) => l.msg === 'credentials changed; making the peer link again' && l.why === 'the secret of this link was removed'));
    a.t.setCredentials({ secrets: [NEW] });
    await exchange(a, b, 'after a moved to the new secret');
    assert.ok(a.t.stats().connects > connects);
    assert.deepEqual([...a.t.refusedLinks()], []);
  });

  test('a node that moves the new secret first before its peer accepts it is refused at once, and the link heals when the peer catches up', async () => {
    const a = await startNode('a', [OLD]);
    const b = await startNode('b', [OLD]);
    connect([a, b]);
    await exchange(a, b, 'before');
    a.t.setCredentials({ secrets: [NEW, OLD] }); // step 2 on a, but step 1 was skipped on b
    await waitFor('the mistake shows', () => a.t.refusedLinks().has('b'));
    b.t.setCredentials({ secrets: [OLD, NEW] });
    await exchange(a, b, 'after b accepts the new secret');
    assert.deepEqual([...a.t.refusedLinks()], []);
  });
});

describe('new certificates on running links', () => {
  const pki = makePki();
  after(() => pki.remove());
  const material = (files: { cert: string; key: string }, ca: string): TlsMaterial => ({
    cert: readFileSync(files.cert),
    key: readFileSync(files.key),
    ca: readFileSync(ca),
    requireClientCert: true,
  });

  test('a CA replaced in three steps: links are remade with the new files at each step and work throughout', async () => {
    const first = pki.issue('first');
    const second = pki.issueRogue('second'); // the new CA's
    const both = `${pki.dir}/both-cas.crt`;
    writeFileSync(both, Buffer.concat([readFileSync(pki.ca), readFileSync(pki.rogueCa)]));
    const a = await startNode('a', [OLD], { tls: material(first, pki.ca) });
    const b = await startNode('b', [OLD], { tls: material(first, pki.ca) });
    connect([a, b]);
    await exchange(a, b, 'before');
    // 1. Both CAs trusted, on each node.
    for (const n of [a, b]) n.t.setCredentials({ secrets: [OLD], tls: material(first, both) });
    await exchange(a, b, 'both CAs trusted');
    // 2. Certificates of the new CA, on each node.
    for (const n of [a, b]) n.t.setCredentials({ secrets: [OLD], tls: material(second, both) });
    await exchange(a, b, 'new certificates');
    // 3. Only the new CA trusted: a node still presenting the old certificate would now be
    // refused, so the links that carry this are made with the files of step 2.
    const connects = a.t.stats().connects;
    for (const n of [a, b]) n.t.setCredentials({ secrets: [OLD], tls: material(second, pki.rogueCa) });
    await exchange(a, b, 'only the new CA');
    assert.ok(a.t.stats().connects > connects, 'the link was made again with the files of step 3');
    assert.deepEqual([...a.t.refusedLinks()], []);
  });

  test('a node that drops the old CA while its peer still presents an old certificate refuses it at once', async () => {
    const first = pki.issue('first-b');
    const second = pki.issueRogue('second-b');
    const a = await startNode('a', [OLD], { tls: material(first, pki.ca) });
    const b = await startNode('b', [OLD], { tls: material(first, pki.ca) });
    connect([a, b]);
    await exchange(a, b, 'before');
    b.t.setCredentials({ secrets: [OLD], tls: material(second, pki.rogueCa) });
    await waitFor('a is refused', () => a.t.refusedLinks().has('b'));
    assert.match(a.t.refusedLinks().get('b')!, /TLS/);
    a.t.setCredentials({ secrets: [OLD], tls: material(second, pki.rogueCa) });
    await exchange(a, b, 'after a moved too');
  });

  test('the files a reload would put in place are checked first', () => {
    const good = pki.issue('checked');
    const other = pki.issue('other');
    assert.equal(tlsMaterialProblem(material(good, pki.ca), { issuedByCa: true }), null);
    assert.match(tlsMaterialProblem({ ...material(good, pki.ca), key: readFileSync(other.key) }, { issuedByCa: true }) ?? '', /cannot be used together/);
    assert.match(tlsMaterialProblem(material(good, pki.rogueCa), { issuedByCa: true }) ?? '', /is not signed by the CA in/);
    assert.equal(tlsMaterialProblem(material(good, pki.rogueCa), { issuedByCa: false }), null);
    assert.match(tlsMaterialProblem(material(good, pki.ca), { issuedByCa: true, now: new Date(Date.now() + 30 * 86_400_000) }) ?? '', /expired/);
  });
});
