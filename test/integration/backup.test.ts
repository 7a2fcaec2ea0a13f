// `palisade snapshot save / inspect` against a real cluster under load (the built CLI), and
// the backup file's own checks: a truncated, corrupted or foreign file is refused by name.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { BACKUP_FORMAT_VERSION, BackupFormatError, backupKey, decodeBackup, encodeBackup } from '../../src/backup/format.js';
import type { BackupSummary } from '../../src/backup/summary.js';
import { LockClient } from '../../src/client/index.js';
import { permissionProblem } from '../../src/server/api/auth.js';
import { CLI, TestCluster } from '../support/cluster.js';

const run = promisify(execFile);

describe('the backup file', () => {
  const header = { clusterId: 'c', index: 42, term: 3, createdAt: '2026-01-01T00:00:00.000Z', node: 'n1', machineFormat: 'palisade.lockfsm', machineVersion: 1 };
  const body = new Uint8Array(Array.from({ length: 300 }, (_, i) => i % 251));
  const key = backupKey('the-cluster-secret-0123456789');
  const file = encodeBackup(header, body, key);
  const decode = (f: Uint8Array) => decodeBackup(f, [key]);

  test('reads back what was written', () => {
    const b = decode(file);
    assert.deepEqual(b.header, { ...header, bodyBytes: body.length });
    assert.deepEqual(b.body, body);
    assert.equal(b.verified, true);
  });

  test('the MAC is checked against every candidate key: a file of another secret is refused, one of a rotated secret accepted', () => {
    const other = backupKey('another-secret-0123456789abcdef');
    assert.throws(() => decodeBackup(file, [other]), /HMAC does not match/);
    assert.equal(decodeBackup(file, [other, key]).verified, true, 'the second candidate matches');
    assert.throws(() => decodeBackup(file, []), /no key/);
    assert.equal(decodeBackup(file, null).verified, false, 'without keys only the structure is checked');
  });

  test('refuses a truncated file at every length', () => {
    for (let len = 0; len < file.length; len += 7) {
      assert.throws(() => decode(file.subarray(0, len)), BackupFormatError, `cut at ${len}`);
    }
    assert.throws(() => decode(file.subarray(0, file.length - 1)), /truncated/);
  });

  test('refuses a flipped byte anywhere, and names the HMAC for the body', () => {
    for (let i = 0; i < file.length; i += 5) {
      const bad = Buffer.from(file);
      bad[i]! ^= 0x01;
      assert.throws(() => decode(bad), BackupFormatError, `flip at ${i}`);
    }
    const bad = Buffer.from(file);
    bad[file.length - 100]! ^= 0xff;
    assert.throws(() => decode(bad), /HMAC/);
  });

  test('refuses a foreign file and a newer format, naming both versions', () => {
    assert.throws(() => decode(Buffer.from('{"hello":1}')), /not a Palisade backup/);
    const newer = Buffer.from(file);
    newer.writeUInt32BE(BACKUP_FORMAT_VERSION + 1, 16);
    assert.throws(() => decode(newer), new RegExp(`version ${BACKUP_FORMAT_VERSION + 1}; this build reads version ${BACKUP_FORMAT_VERSION}`));
  });
});

test('a backup reads every lock and key: only admin tokens may take one', () => {
  const everything = { name: 'ops', prefixes: null, readOnly: false, admin: false };
  assert.equal(permissionProblem(everything, { id: 1, op: 'snapshot', backup: true })?.code, 'PERMISSION_DENIED');
  assert.equal(permissionProblem({ ...everything, admin: true }, { id: 1, op: 'snapshot', backup: true }), null);
});

describe('palisade snapshot save / inspect on a live cluster, restore into a new one', () => {
  let c: TestCluster;
  let backup: { file: string; summary: BackupSummary } | null = null;
  before(async () => {
    c = await TestCluster.started();
  });
  after(() => c.stop());

  test('a save under load holds every write acknowledged before it, and inspect shows it', async () => {
    const client = await LockClient.connect({ endpoints: c.endpoints, ttlMs: 30_000 });
    const loader = await LockClient.connect({ endpoints: c.endpoints, ttlMs: 30_000 });
    try {
      const held = await client.acquire('held/a');
      const leadership = await client.election('primary').campaign('host-a');
      for (let i = 0; i < 10; i++) await client.put(`key/${i}`, `value ${i}`);

      // Load: lock cycles and puts, until the save has finished.
      let stop = false;
      let ackedBeforeSave = 0;
      let savingStarted = false;
      const load = (async () => {
        for (let i = 0; !stop; i++) {
          const l = await loader.acquire(`load/${i % 5}`);
          await l.release();
          const r = await loader.put('load/counter', String(i));
          if (!savingStarted) ackedBeforeSave = r.revision;
        }
      })();
      await new Promise((r) => setTimeout(r, 300));
      savingStarted = true;
      const floor = ackedBeforeSave;
      const file = join(c.dir, 'backup.palisade');
      const saved = await run(process.execPath, [CLI, 'snapshot', 'save', file, '--endpoints', c.endpoints.join(',')]);
      stop = true;
      await load;
      assert.match(saved.stdout, /^saved .*: cluster palisade-test, index \d+/);

      const out = await run(process.execPath, [CLI, 'snapshot', 'inspect', file, '--json']);
      const s = JSON.parse(out.stdout) as BackupSummary;
      const dump = JSON.stringify({ ...s, keys: s.keys.length });
      assert.equal(s.header.clusterId, 'palisade-test');
      assert.ok(floor > 0 && s.header.index >= floor, `backup index ${s.header.index} covers the write acknowledged at ${floor}`);
      const counter = s.keys.find((k) => k.key === 'load/counter');
      assert.ok(counter && counter.revision >= floor, 'the last put acknowledged before the save is in it');
      for (let i = 0; i < 10; i++) assert.ok(s.keys.some((k) => k.key === `key/${i}`), `key/${i}`);
      const lock = s.locks.find((l) => l.name === 'held/a');
      assert.deepEqual(lock?.holders.map((h) => h.token), [held.token]);
      const e = s.elections.find((x) => x.name === 'primary');
      assert.equal(e?.token, leadership.token, dump);
      assert.equal(e?.value, 'host-a', dump);
      assert.equal(s.sessions, 2, dump);
      // The loader may hold one of its load/ locks at the saved index: the highest token is
      // the highest of everything held, at least ours, and never past the saved index.
      const listed = Math.max(...s.locks.flatMap((l) => l.holders.map((h) => h.token)), ...s.elections.map((x) => x.token ?? 0));
      assert.equal(s.highestToken, listed, dump);
      assert.ok(s.highestToken >= Math.max(held.token, leadership.token) && s.highestToken <= s.header.index, dump);

      backup = { file, summary: s };
      const text = await run(process.execPath, [CLI, 'snapshot', 'inspect', file]);
      assert.match(text.stdout, /cluster\s+palisade-test/);
      assert.match(text.stdout, new RegExp(`held/a  session \\d+ token ${held.token} exclusive`));

      // A damaged copy is refused with a clear message and a failing exit status.
      const cut = join(c.dir, 'cut.palisade');
      writeFileSync(cut, readFileSync(file).subarray(0, 100));
      await assert.rejects(run(process.execPath, [CLI, 'snapshot', 'inspect', cut]), (e: { code: number; stderr: string }) => {
        assert.equal(e.code, 1);
        assert.match(e.stderr, /cut\.palisade: truncated/);
        return true;
      });
    } finally {
      await client.close();
      await loader.close();
    }
  });

  test('restore builds a new cluster with every key, free locks and tokens above the backup', async () => {
    assert.ok(backup, 'the save test ran');
    const { file, summary } = backup as { file: string; summary: BackupSummary };
    const fresh = await TestCluster.create({ extraConfig: { clusterId: 'palisade-restored' } });
    try {
      // The old cluster id is refused: a restored cluster is a new one.
      await assert.rejects(run(process.execPath, [CLI, 'snapshot', 'restore', file, '--config', c.configPath]), /new clusterId/);
      const minToken = summary.header.index + 1000;
      const r = await run(process.execPath, [CLI, 'snapshot', 'restore', file, '--config', fresh.configPath, '--min-token', String(minToken)]);
      assert.match(r.stdout, new RegExp(`token floor ${minToken}: --min-token`));
      // held/a, and a load/ lock when the save caught the loader holding one.
      const held = summary.locks.filter((l) => l.holders.length > 0).length;
      assert.match(r.stdout, new RegExp(`ended ${summary.sessions} sessions: ${held} held locks are free, 1 elections have no leader`));
      // A second restore over the written directories is refused.
      await assert.rejects(run(process.execPath, [CLI, 'snapshot', 'restore', file, '--config', fresh.configPath]), /is not empty/);

      await fresh.startAll();
      await fresh.waitForLeader();
      const client = await LockClient.connect({ endpoints: fresh.endpoints, ttlMs: 30_000 });
      try {
        for (const k of summary.keys) {
          const kv = await client.kvGet(k.key);
          assert.equal(kv?.revision, k.revision, `${k.key} kept its revision`);
          assert.equal(kv?.value.length, k.bytes);
        }
        assert.equal(new TextDecoder().decode((await client.kvGet('key/3'))!.value), 'value 3');
        // The backup's holder is gone with its session: the lock is free, and its new token
        // exceeds every token of the backup and the floor.
        const lock = await client.tryAcquire('held/a');
        assert.ok(lock, 'the restored lock is free');
        assert.ok(lock.token > minToken && lock.token > summary.highestToken, `new token ${lock.token} > floor ${minToken}`);
        const leadership = await client.election('primary').campaign('host-b');
        assert.ok(leadership.token > minToken, 'a new leader epoch exceeds the floor');
        const put = await client.put('key/new', 'x');
        assert.ok(put.revision > minToken);
      } finally {
        await client.close();
      }

      // Without --min-token the floor is the safe bound: far above the backup's index.
      const other = await TestCluster.create({ nodes: 1, extraConfig: { clusterId: 'palisade-restored-2' } });
      try {
        const d = await run(process.execPath, [CLI, 'snapshot', 'restore', file, '--config', other.configPath]);
        const floor = Number(/token floor (\d+)/.exec(d.stdout)?.[1]);
        assert.ok(floor >= summary.header.index + 3_600_000_000, `default floor ${floor}`);
      } finally {
        await other.stop();
      }
    } finally {
      await fresh.stop();
    }
  });
});
