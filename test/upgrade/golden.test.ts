// Golden fixtures (test/fixtures/v1, written by test/fixtures/make-fixtures.ts with the code of
// their day): a data directory, a backup file and a recorded client session. The current
// code must read every generation kept there; a format change that cannot fails here, not in
// an operator's upgrade. And a node refuses data of a format it cannot read, naming both.
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Level } from 'level';
import { readBackupFile } from '../../src/backup/file.js';
import { summarize } from '../../src/backup/summary.js';
import { readSurvivor } from '../../src/backup/survivor.js';
import { DEFAULT_MACHINE_CONFIG, type LockMachine } from '../../src/lockfsm/index.js';
import { RaftStorage } from '../../src/storage/index.js';
import { META_KEY } from '../../src/storage/keys.js';
import { decodeMeta, encodeValue } from '../../src/storage/records.js';
import { decodeFrame, encodeFrame } from '../../src/protocol/codec.js';
import { rpc } from '../../src/protocol/rpc.js';
import { isRequestError, parseRequest } from '../../src/protocol/validate.js';
import { TestCluster } from '../support/cluster.js';
import { RawClient } from '../support/raw-client.js';
import { FIXTURE_CLUSTER_ID, SESSION_SCRIPT } from '../fixtures/session-script.js';

const V1 = join(import.meta.dirname, '../fixtures/v1');
const scratch = mkdtempSync(join(tmpdir(), 'palisade-golden-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

/** A writable copy: LevelDB writes on open, and the fixture must stay as it was made. */
function copyOfDataDir(name: string): string {
  const dir = join(scratch, name);
  cpSync(join(V1, 'data-n1'), dir, { recursive: true });
  return dir;
}

/** What the recorded session left: one session holding fixture/lock (token 5) and a share of
 *  fixture/pool (token 8), leading fixture/election (epoch 7), two keys. */
function assertFixtureState(m: LockMachine): void {
  assert.deepEqual(m.kvGet('fixture/key'), { key: 'fixture/key', value: new Uint8Array([1, 2, 3, 250]), revision: 6 });
  assert.equal(m.kvGet('fixture/fenced')?.revision, 9);
  assert.deepEqual(m.lock('fixture/lock')?.holders, [{ session: 4, token: 5, mode: 'exclusive' }]);
  assert.deepEqual(m.lock('fixture/pool')?.holders, [{ session: 4, token: 8, mode: 'shared' }]);
  assert.deepEqual(m.election('fixture/election'), { election: 'fixture/election', leader: 4, value: 'leader-1', token: 7, candidates: [] });
  assert.equal(m.stats().sessions, 1);
  assert.equal(m.session(4)?.label, 'fixture');
}

describe('golden fixtures v1', () => {
  test('the data directory reads back: identity, log, watermark, and the state it replays to', async () => {
    const s = await readSurvivor(copyOfDataDir('read'), DEFAULT_MACHINE_CONFIG);
    assert.deepEqual(s.identity, { clusterId: FIXTURE_CLUSTER_ID, nodeId: 'n1' });
    assert.ok(s.lastIndex >= 9 && s.commitIndex === s.lastIndex, `log to ${s.lastIndex}, commit ${s.commitIndex}`);
    assertFixtureState(s.machine);
  });

  test('the backup file reads back', async () => {
    // Readable for inspection (its checksum checked, its origin not): format 1 is unkeyed.
    const b = await readBackupFile(join(V1, 'backup.palisade'), null);
    assert.equal(b.verified, false);
    assert.equal(b.header.clusterId, FIXTURE_CLUSTER_ID);
    assert.equal(b.header.machineVersion, 1);
    const s = summarize(b);
    assert.equal(s.highestToken, 8);
    assert.deepEqual(s.keys.map((k) => k.key), ['fixture/fenced', 'fixture/key']);
  });

  test('a node refuses a data directory of a storage format it cannot read, naming both versions', async () => {
    const dir = copyOfDataDir('newer');
    const db = new Level<Uint8Array, Uint8Array>(dir, { keyEncoding: 'view', valueEncoding: 'view' });
    await db.open();
    const meta = decodeMeta((await db.get(META_KEY))!);
    await db.put(META_KEY, encodeValue({ ...meta, format: 2 }));
    await db.close();
    await assert.rejects(RaftStorage.open(dir, { clusterId: FIXTURE_CLUSTER_ID, nodeId: 'n1' }), /unsupported storage format 2 \(this build reads format 1\)/);
  });

  test('the recorded client requests are still accepted as they were sent', () => {
    const lines = readFileSync(join(V1, 'client-session.jsonl'), 'utf8').trim().split('\n');
    assert.equal(lines.length, SESSION_SCRIPT.length);
    for (const line of lines) {
      const { request, response } = JSON.parse(line) as { request: string; response: string };
      const req = parseRequest(decodeFrame(Buffer.from(request, 'base64')));
      // The script's last step is refused by validation on purpose (a recorded error answer).
      const refused = (decodeFrame(Buffer.from(response, 'base64')) as { error?: { code: string } }).error?.code === 'INVALID_ARGUMENT';
      assert.equal(isRequestError(req), refused, JSON.stringify(req));
    }
  });
});

describe('golden fixtures v1 against real nodes', () => {
  let onFixture: TestCluster;
  let fresh: TestCluster;
  before(async () => {
    onFixture = await TestCluster.create({ nodes: 1, extraConfig: { clusterId: FIXTURE_CLUSTER_ID } });
    cpSync(join(V1, 'data-n1'), onFixture.node('n1').dataDir, { recursive: true });
    fresh = await TestCluster.create({ nodes: 1, extraConfig: { clusterId: FIXTURE_CLUSTER_ID } });
  });
  after(async () => {
    await onFixture.stop();
    await fresh.stop();
  });

  test('a node starts on the v1 data directory and serves its state', async () => {
    await onFixture.startAll();
    await onFixture.waitForLeader();
    const url = onFixture.node('n1').clientUrl;
    const kv = await rpc(url, { op: 'kvGet', key: 'fixture/key' });
    assert.ok(kv);
    assert.equal(kv.revision, 6);
    assert.deepEqual([...kv.value], [1, 2, 3, 250]);
    const lock = await rpc(url, { op: 'get', name: 'fixture/lock' });
    assert.deepEqual(lock.holders.map((h) => h.token), [5]);
  });

  test('the recorded session replayed against a new node gets the recorded answers', async () => {
    await fresh.startAll();
    await fresh.waitForLeader();
    const client = await RawClient.connect(fresh.node('n1').clientUrl);
    try {
      const lines = readFileSync(join(V1, 'client-session.jsonl'), 'utf8').trim().split('\n');
      // Log indexes (session ids, tokens, revisions) depend on what the cluster logged before
      // the session: a cluster now logs its settings first, one entry the recorded cluster did
      // not have. The recorded answers hold with every index moved by that many entries.
      let shift: number | null = null;
      for (const line of lines) {
        const { request, response } = JSON.parse(line) as { request: string; response: string };
        const { id: _id, ...body } = decodeFrame(Buffer.from(request, 'base64')) as Record<string, unknown>;
        const recorded = decodeFrame(Buffer.from(response, 'base64')) as { ok: boolean; result?: unknown; error?: unknown };
        const sent = shift === null ? body : (shiftIndexes(body, shift) as Record<string, unknown>);
        const got = await client.call(sent);
        if (shift === null && body.op === 'openSession') shift = (got as { result: { session: number } }).result.session - (recorded.result as { session: number }).session;
        assertHolds(normalize(got), shiftIndexes(normalize(recorded), shift ?? 0), `answer to ${JSON.stringify(body)}`);
      }
      assert.equal(shift, 1, 'one entry more before the session: the settings');
      // The requests the script sends today encode to the recorded bytes (wire encoding stable).
      const first = JSON.parse(lines[0]!) as { request: string };
      assert.deepEqual(Buffer.from(encodeFrame({ id: 1, ...SESSION_SCRIPT[0]!([]) })).toString('base64'), first.request);
    } finally {
      client.close();
    }
  });
});

/**
 * Every field of the recorded answer is in today's, with the same value: an old client reads
 * what it read then. Fields added since (an old client ignores them) are allowed; arrays keep
 * their length.
 */
function assertHolds(actual: unknown, recorded: unknown, path: string): void {
  if (recorded !== null && typeof recorded === 'object') {
    assert.ok(actual !== null && typeof actual === 'object', `${path}: expected an object or array, got ${JSON.stringify(actual)}`);
    if (Array.isArray(recorded)) {
      assert.ok(Array.isArray(actual) && actual.length === recorded.length, `${path}: expected ${recorded.length} items, got ${JSON.stringify(actual)}`);
    }
    for (const [k, v] of Object.entries(recorded)) assertHolds((actual as Record<string, unknown>)[k], v, `${path}.${k}`);
    return;
  }
  assert.deepEqual(actual, recorded, path);
}

/** Fields that hold a log index. */
const INDEX_FIELDS = new Set(['session', 'token', 'index', 'revision', 'currentToken', 'leader']);

/** `x` with every log-index field moved by `shift` entries. */
function shiftIndexes(x: unknown, shift: number): unknown {
  if (Array.isArray(x)) return x.map((v) => shiftIndexes(v, shift));
  if (x === null || typeof x !== 'object' || x instanceof Uint8Array) return x;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(x)) out[k] = INDEX_FIELDS.has(k) && typeof v === 'number' && v > 0 ? v + shift : shiftIndexes(v, shift);
  return out;
}

/** Ports differ from run to run: client URLs are compared by shape. */
function normalize(frame: { ok: boolean; result?: unknown; error?: unknown }): unknown {
  const { ok, result, error } = frame;
  return JSON.parse(JSON.stringify({ ok, result, error }, (k, v: unknown) => (k === 'clientUrl' && typeof v === 'string' ? v.replace(/:\d+$/, ':PORT') : v instanceof Uint8Array ? [...v] : v)));
}
